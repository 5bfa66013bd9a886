#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR GPL-2.0-only
"""Writes the shim's version script from the entry-point table, so the list
of exports cannot drift from the list of wrappers."""
import re
import sys

table, template, output = sys.argv[1:4]
text = open(table).read()
symbols = re.findall(r'\b(?:DRIVER|RUNTIME)\((\w+)', text)
lines = ''.join(f'    {s};\n' for s in symbols)
with open(output, 'w') as out:
    out.write(open(template).read().replace('@SYMBOLS@\n', lines))
