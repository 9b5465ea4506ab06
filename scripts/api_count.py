#!/usr/bin/env python3
"""Counts sweepcast's public API outside `low_level`, from rustdoc's HTML (`cargo doc
--no-deps`): every item page (struct, enum, trait, function, constant, type, static, macro,
module) and, on each, the inherent methods, associated constants and types, fields and
variants (trait implementations are not counted; a trait's own methods are). A re-export's
redirect page is not an item. It prints that total, and the count in issue 35's terms
("methods and associated items counted too"): items, methods, associated constants and
types, and trait methods, without fields and variants.

It also counts the entries whose rustdoc names no documented path: a module, item, method,
associated constant or trait method without a "Used by:" paragraph (issue 35: each entry of
the front hall names the documented path that uses it; fields and variants belong to their
type's). `--list` prints every entry; `--unnamed` prints those that name no path;
`--require-named` also prints them and exits 1 if there are any (CI runs it so).

Usage: python3 scripts/api_count.py [DOC_DIR] [--list] [--unnamed] [--require-named]
(DOC_DIR defaults to target/doc)
"""
import os, re, sys

args = [a for a in sys.argv[1:] if not a.startswith('--')]
doc = os.path.join(args[0] if args else 'target/doc', 'sweepcast')
listing = '--list' in sys.argv
require_named = '--require-named' in sys.argv
unnamed_listing = '--unnamed' in sys.argv or require_named
NAMED = ('method', 'tymethod', 'associatedconstant')
unnamed = []
KINDS = ('struct', 'enum', 'trait', 'fn', 'constant', 'type', 'static', 'macro', 'union')
items, members = [], []
for directory, _, files in os.walk(doc):
    relative = os.path.relpath(directory, doc)
    if relative.split(os.sep)[0] == 'low_level':
        continue
    for name in sorted(files):
        kind = name.split('.')[0]
        if not name.endswith('.html') or kind not in KINDS + ('index',):
            continue
        text = open(os.path.join(directory, name), encoding='utf-8').read()
        if 'http-equiv="refresh"' in text:
            continue
        path = '::'.join(p for p in relative.split(os.sep) if p != '.')
        if kind == 'index':
            if path:
                items.append(('mod', path))
                # A module's own docs: before its table of items.
                top = re.split(r'id="(?:modules|structs|enums|traits|functions|constants|'
                               r'types|statics|macros|reexports)"', text)[0]
                if 'Used by:' not in top:
                    unnamed.append(('mod', path))
            continue
        item = name.split('.')[1]
        qualified = '::'.join(p for p in (path, item) if p)
        items.append((kind, qualified))
        # The item's own docs: before its first member or implementation.
        top = re.split(r'id="(?:implementations|fields|variants|required-methods|'
                       r'provided-methods|required-associated-types|'
                       r'required-associated-consts|provided-associated-consts|'
                       r'trait-implementations)"|id="(?:method|tymethod|associatedconstant|'
                       r'associatedtype|structfield|variant)\.', text)[0]
        if 'Used by:' not in top:
            unnamed.append((kind, qualified))
        # Members: before the trait implementations (inherent impls, fields, variants, a
        # trait's own methods).
        own = re.split(r'id="(?:trait-implementations|synthetic-implementations|'
                       r'blanket-implementations|implementors|foreign-impls)"', text)[0]
        for prefix in ('method', 'tymethod', 'associatedconstant', 'associatedtype',
                       'structfield', 'variant'):
            for member in sorted(set(re.findall(r'id="' + prefix + r'\.([\w-]+)"', own))):
                members.append((prefix, f'{qualified}::{member}'))
                if prefix in NAMED:
                    # The member's docs: from its anchor to the next member's anchor.
                    rest = own.split(f'id="{prefix}.{member}"', 1)[1]
                    docs = re.split(r'id="(?:method|tymethod|associatedconstant|'
                                    r'associatedtype|structfield|variant)\.', rest)[0]
                    if 'Used by:' not in docs:
                        unnamed.append((prefix, f'{qualified}::{member}'))
if listing:
    for kind, path in sorted(items + members, key=lambda x: x[1]):
        print(f'{kind:20} {path}')
if unnamed_listing:
    for kind, path in sorted(unnamed, key=lambda x: x[1]):
        print(f'{kind:20} {path}')
print(f'public API outside low_level: {len(items) + len(members)} '
      f'({len(items)} items, {len(members)} methods, fields, variants and associated items)')
named = len(items) + sum(kind in NAMED for kind, _ in members)
# Issue 35's own terms: items, "methods and associated items counted too" (fields and enum
# variants are neither; they belong to their type, as its layout or its cases).
associated = len(items) + sum(kind in NAMED + ('associatedtype',) for kind, _ in members)
print(f'items, methods and associated items (issue 35\'s terms; without fields and '
      f'variants): {associated}')
print(f'entries that name no documented path (no "Used by:"): {len(unnamed)} of {named} '
      f'(modules, items, methods, associated constants and trait methods)')
if not items:
    print(f'FAIL: no public item under {doc}: run `cargo doc --no-deps` first', file=sys.stderr)
    sys.exit(1)
if require_named and unnamed:
    print('FAIL: the entries above name no documented path: add a "Used by:" paragraph '
          'naming the README section, docs/ page, example or binding that uses each, or take '
          'the entry out of the public API', file=sys.stderr)
    sys.exit(1)
