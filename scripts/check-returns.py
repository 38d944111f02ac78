#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every code a public function returns literally is in its Returns line.

For each VEGA_API function of lib/include/vega/*.h, takes the codes its comment names
(-EXXX, VEGA_ERR_XXX) and the codes its definition in lib/ returns literally
(`return -EINVAL;`, `return VEGA_ERR_CLOSED;`), and lists those the comment does not name.
Codes that come back from a call (`return r;`) are not seen: this catches the common slip,
a new early return nobody wrote down, not every path. VEGA_ERR_INTERNAL (a bug) is exempt.
Exit status 1 when a function's comment is missing a code.

usage: scripts/check-returns.py [ROOT]
"""
import glob
import os
import re
import sys

CODE = re.compile(r'(-E[A-Z0-9]+|VEGA_ERR_[A-Z0-9_]+)')
ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')


def documented():
    docs = {}
    for h in sorted(glob.glob(os.path.join(ROOT, 'lib/include/vega/*.h'))):
        s = open(h, encoding='utf-8').read()
        for m in re.finditer(r'/\*((?:[^*]|\*(?!/))*)\*/\n((?:[^\n]+\n)+)', s):
            comment, decls = m.group(1), m.group(2)
            for fm in re.finditer(r'VEGA_API[^;(]*?\b(vega_\w+)\s*\(', decls):
                docs[fm.group(1)] = (set(CODE.findall(comment)), 'Returns' in comment)
    return docs


def definitions():
    bodies = {}
    for c in sorted(glob.glob(os.path.join(ROOT, 'lib/**/*.c'), recursive=True)):
        s = open(c, encoding='utf-8').read()
        for m in re.finditer(r'^[A-Za-z_][^\n;{}()]*?\b(vega_\w+)\(([^;{]*?)\)\n\{\n(.*?)^\}', s,
                             re.M | re.S):
            bodies[m.group(1)] = (os.path.relpath(c, ROOT), m.group(3))
    return bodies


def main():
    docs, bodies = documented(), definitions()
    checked = bad = 0
    for f, (doc, has_returns) in sorted(docs.items()):
        name = f if f in bodies else f + '_versioned' if f + '_versioned' in bodies else None
        if name is None or not has_returns:
            continue
        checked += 1
        path, body = bodies[name]
        ret = set(re.findall(r'return\s+\(?(-E[A-Z0-9]+|VEGA_ERR_[A-Z0-9_]+)\b', body))
        missing = sorted(ret - doc - {'VEGA_ERR_INTERNAL'})
        if missing:
            bad += 1
            print('%s (%s) returns %s: not in its Returns line' % (f, path, ', '.join(missing)))
    print('check-returns: %d functions with a Returns line checked, %d incomplete' % (checked, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
