# The figure of one run (`atrain plot RUN_DIR` writes SERIES and runs this):
#
#   gnuplot -e "series='DIR/run_plot.gp'" apps/plot/run.gp
#
# SERIES names the run's metrics.csv and its columns, the title and the fault
# windows (from the run's report); writes OUT.png and OUT.svg (OUT from SERIES),
# four panels against run-clock time: test accuracy, training loss, consensus
# error (log scale), bytes sent (cumulative, all nodes). Every fault window is
# shaded in every panel, one colour per kind, listed under the panels.
if (!exists("series")) {
  print "usage: gnuplot -e \"series='DIR/run_plot.gp'\" apps/plot/run.gp"
  exit status 2
}
load series
set datafile separator ","
set datafile columnheaders
positive(y) = y > 0 ? y : NaN
nlegend = nwin < 12 ? nwin : 12
bottom = 0.11 + 0.028 * (nlegend + (nwin > nlegend))

do for [k=1:nwin] {
  set object k rect from win_from[k], graph 0 to win_to[k], graph 1 behind \
      fc rgb win_colour[k] fs transparent solid 0.18 noborder
}

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1200,900 font "sans,10" noenhanced
  } else {
    set terminal svg size 1200,900 font "sans,10" noenhanced dynamic background "white"
  }
  set output out.".".fmt
  set multiplot layout 2,2 title title."\n".subtitle font "sans,12" \
      margins 0.07,0.98,bottom,0.90 spacing 0.08,0.11
  set grid
  set xrange [0:t_end]
  set xlabel "time (s, run clock)"
  set style data linespoints
  unset key

  set title "Test accuracy"
  set ylabel "test accuracy (fraction correct)"
  if (time_to_target == time_to_target) {
    set arrow 1 from time_to_target, graph 0 to time_to_target, graph 1 nohead dt 3 lc "black"
  }
  if (target > 0) {
    set label 2 sprintf("target %g", target) at graph 0.01, first target left offset 0,0.6
  }
  plot csv using col_time:col_accuracy lc "#1f77b4" lw 1.5 pt 7 ps 0.4, \
       (target > 0 ? target : NaN) with lines dt 2 lc "black"
  unset arrow 1
  unset label 2

  set title "Training loss"
  set ylabel "training loss"
  plot csv using col_time:col_loss lc "#ff7f0e" lw 1.5 pt 7 ps 0.4

  set title "Consensus error"
  if (consensus_positive) {
    set ylabel "consensus error (1/n) sum |x_i - xbar|^2 (log)"
    set logscale y
    plot csv using col_time:(positive(column(col_consensus))) lc "#2ca02c" lw 1.5 pt 7 ps 0.4
    unset logscale y
  } else {
    set ylabel "consensus error (zero: one shared model)"
    plot csv using col_time:col_consensus lc "#2ca02c" lw 1.5 pt 7 ps 0.4
  }

  set title "Bytes sent"
  set ylabel "bytes sent (MB, cumulative, all nodes)"
  do for [k=1:nlegend] {
    set label 100+k "■ ".win_label[k] at screen 0.07, screen (bottom - 0.09 - 0.028 * (k - 1)) \
        left tc rgb win_colour[k] front
  }
  if (nwin > nlegend) {
    set label 100 sprintf("... and %d more windows (report.json: faults, stragglers, quarantined)", \
        nwin - nlegend) at screen 0.07, screen (bottom - 0.09 - 0.028 * nlegend) left front
  }
  plot csv using col_time:(column(col_bytes) / 1e6) lc "#9467bd" lw 1.5 pt 7 ps 0.4
  unset label
  unset multiplot
  unset output
}
