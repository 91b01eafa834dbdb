#!/usr/bin/env python3
"""Counts ThreadSanitizer reports by whose code they are in (docs/RELIABILITY.md
"ThreadSanitizer"): python3 tests/sanitizers/tsan_classify.py LOG... [--list].

A report is put in the first class that fits:
  openmp  a thread of the report was started by libgomp (an OpenMP team thread)
  onednn  a frame of either access is in libdnnl
  caf     one of the top three frames of either access is CAF's (libcaf_*, or a
          CAF template instantiated in atrain's binary), or the memory is a
          message or mailbox element CAF allocated
  atrain  the rest: both accesses in atrain's code (or the standard library's
          or protobuf's, inlined into it)
--list prints each class's distinct reports (top frame of each access) with counts.
"""
import collections
import re
import sys

FRAME = re.compile(r'^\s+#\d+ (.*?) (\S+) \((\S+?)\+0x[0-9a-f]+\)$')


def parse(text):
    reports = []
    for chunk in text.split('==================\n'):
        if 'WARNING: ThreadSanitizer' not in chunk:
            continue
        blocks, cur = [], None
        for line in chunk.splitlines()[1:]:
            if line.startswith('  ') and not line.startswith('    '):
                cur = {'head': line.strip(), 'frames': []}
                blocks.append(cur)
            elif cur is not None:
                m = FRAME.match(line)
                if m:
                    cur['frames'].append(m.groups())  # (function, source, module)
        reports.append(blocks)
    return reports


def accesses(blocks):
    return [b for b in blocks if re.match(r'(Previous )?(atomic )?(read|write)', b['head'], re.I)]


def is_caf(fn, src, mod):
    return 'libcaf' in mod or fn.startswith(('caf::', 'non-virtual thunk to caf::')) or '/caf/' in src


def classify(blocks):
    threads = [b for b in blocks if b['head'].startswith('Thread ')]
    if any('libgomp' in mod for b in threads for _, _, mod in b['frames']):
        return 'openmp'
    acc = accesses(blocks)
    if any('libdnnl' in mod for b in acc for _, _, mod in b['frames']):
        return 'onednn'
    if any(is_caf(*f) for b in acc for f in b['frames'][:3]):
        return 'caf'
    loc = next((b for b in blocks if b['head'].startswith('Location')), None)
    if loc and any(re.search(r'make_mailbox_element|make_message|mailbox_element|message_data', fn)
                   or 'libcaf' in mod for fn, _, mod in loc['frames'][:6]):
        return 'caf'
    return 'atrain'


def key(blocks):
    parts = []
    for b in accesses(blocks):
        top = next((f for f in b['frames'] if 'libsanitizer' not in f[1]
                    and not f[0].startswith(('std::', '__gnu_cxx::', 'operator new', 'operator delete'))),
                   b['frames'][0] if b['frames'] else ('?', '?', '?'))
        parts.append(f'{top[0][:100]} @ {top[1]}')
    return ' | '.join(parts)


def main(argv):
    listing = '--list' in argv
    reports = []
    for path in (a for a in argv if a != '--list'):
        with open(path, errors='replace') as f:
            reports += parse(f.read())
    counts = collections.Counter()
    distinct = collections.defaultdict(collections.Counter)
    for r in reports:
        c = classify(r)
        counts[c] += 1
        distinct[c][key(r)] += 1
    print(f'{len(reports)} reports: ' +
          ', '.join(f'{c} {counts[c]} ({len(distinct[c])} distinct)' for c in
                    ('caf', 'onednn', 'openmp', 'atrain')))
    if listing:
        for c in distinct:
            print(f'== {c}')
            for k, n in distinct[c].most_common():
                print(f'  {n:4d}  {k}')


if __name__ == '__main__':
    main(sys.argv[1:])
