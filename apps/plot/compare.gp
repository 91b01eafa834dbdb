# Figures of an `atrain compare` directory (PNG and SVG of each):
#
#   gnuplot -e "dir='DIR'" apps/plot/compare.gp
#
# Reads DIR/series.gp (algorithms, seeds, target, bar heights, the scenario), DIR/bands.gp and
# DIR/bands_NAME.csv (per algorithm with curves: mean, min and max over the seeds at every
# evaluation time, linear between a seed's evaluations), DIR/bars.csv and DIR/staleness.csv;
# writes into DIR:
#   accuracy_vs_time   test accuracy of the evaluated model vs run-clock time, and (dotted,
#                      the same colour) the mean over seeds of the worst node's own model
#   loss_vs_time       training loss vs time
#   consensus_vs_time  consensus error (1/n) sum ||x_i - xbar||^2 vs time (log scale)
#   time_to_target     mean time to the target accuracy per algorithm, +- sample std
#   staleness          mean staleness per node per algorithm
# Curves: the mean over the seeds (line) and the band between the seeds' min and max (shaded);
# where a seed's run ended earlier (stop at target), over the seeds still running. One colour
# per algorithm (the same in every figure); no legend entry for an algorithm without a line.
if (!exists("dir")) dir = "."
load dir."/series.gp"
load dir."/bands.gp"
set datafile separator ","
set datafile columnheaders
na = words(algorithms)
ns = words(seeds)
csv(name) = dir."/".name.".csv"
nb = words(band_names)
nc = words(consensus_names)
nw = exists("worst_names") ? words(worst_names) : 0
band(name) = dir."/bands_".name.".csv"
positive(y) = y > 0 ? y : NaN
band_note = ns > 1 ? sprintf("mean of %d seeds, shaded: min-max", ns) : "one seed"
# twelve distinct colours, one per algorithm compare knows (tab10 + two)
array palette[12] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", \
                     "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000080", "#808000"]
do for [k=1:12] { set linetype k lc rgb palette[k] lw 1.5 }
set linetype cycle 12
tlabel = target > 0 ? sprintf("target %g", target) : ""

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 960,600 font "sans,11" noenhanced
  } else {
    set terminal svg size 960,600 font "sans,11" noenhanced dynamic background "white"
  }
  set grid
  set key outside right top
  set xlabel "time (s, run clock)"
  unset logscale y
  set style data lines

  set output dir."/accuracy_vs_time.".fmt
  set title "Test accuracy vs time (".band_note.")\n".scenario
  set ylabel "test accuracy (fraction correct)"
  set autoscale y
  plot for [k=1:nb] band(word(band_names, k)) using 1:4:5 with filledcurves \
         lc word(band_colours, k) + 0 fs transparent solid 0.2 noborder notitle, \
       for [k=1:nb] band(word(band_names, k)) using 1:3 lc word(band_colours, k) + 0 lw 1.5 \
         title word(band_names, k), \
       for [k=1:nw] band(word(worst_names, k)) using 1:12 lc word(worst_colours, k) + 0 lw 1 \
         dt 3 title word(worst_names, k)." worst node", \
       (target > 0 ? target : NaN) dt 2 lc "black" title tlabel

  set output dir."/loss_vs_time.".fmt
  set title "Training loss vs time (".band_note.")\n".scenario
  set ylabel "training loss (mean logistic loss)"
  plot for [k=1:nb] band(word(band_names, k)) using 1:7:8 with filledcurves \
         lc word(band_colours, k) + 0 fs transparent solid 0.2 noborder notitle, \
       for [k=1:nb] band(word(band_names, k)) using 1:6 lc word(band_colours, k) + 0 lw 1.5 \
         title word(band_names, k)

  set output dir."/consensus_vs_time.".fmt
  set title "Consensus error vs time (".band_note."; zero for one shared model: not drawn)\n".scenario
  set ylabel "consensus error (1/n) sum |x_i - xbar|^2"
  if (nc > 0) {
    set logscale y
    plot for [k=1:nc] band(word(consensus_names, k)) using 1:(positive($10)):(positive($11)) \
           with filledcurves lc word(consensus_colours, k) + 0 fs transparent solid 0.2 noborder notitle, \
         for [k=1:nc] band(word(consensus_names, k)) using 1:(positive($9)) \
           lc word(consensus_colours, k) + 0 lw 1.5 title word(consensus_names, k)
    unset logscale y
  } else {
    set label 1 "no algorithm has a consensus error above zero" at graph 0.5, graph 0.5 center
    plot [0:1] [0:1] -1 notitle
    unset label 1
  }

  set output dir."/time_to_target.".fmt
  set title "Time to ".tlabel." (mean +- sample std over seeds; missing bar: not reached in every seed)\n".scenario
  set ylabel "time to target (s, run clock)"
  set xlabel "algorithm"
  set yrange [0:(time_to_target_max > 0 ? 1.1 * time_to_target_max : 1)]
  set xrange [-0.6:na-0.4]
  set style fill solid 0.7 border -1
  set boxwidth 0.7
  unset key
  plot csv("bars") using 0:4:($0+1):xtic(1) with boxes lc variable, \
       "" using 0:4:5 with yerrorbars lc "black" pt 0, \
       "" using 0:(0):(strcol(4) eq "nan" ? "not reached" : "") with labels offset 0,1
  set autoscale x
  set autoscale y

  set output dir."/staleness.".fmt
  set title "Mean staleness per node (each algorithm's unit, see ALGORITHMS.md)\n".scenario
  set ylabel "staleness (mean per node)"
  set xlabel "node"
  set key outside right top
  set style data histograms
  set style histogram clustered gap 1
  set yrange [0:(staleness_max > 0 ? 1.1 * staleness_max : 1)]
  plot for [i=1:na] csv("staleness") using (column(i+1)):xtic(1) lc i \
       title (strstrt(" ".staleness_names." ", " ".word(algorithms, i)." ") > 0 ? word(algorithms, i) : "")
  set autoscale y
  set style data lines
  unset output
}
