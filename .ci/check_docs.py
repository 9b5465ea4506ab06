#!/usr/bin/env python3
"""Checks README.md and docs/*.md: every relative link names a file that exists (and a
#fragment a heading of that file, by GitHub's slug rule), and the README's crate map lists
every file under src/ and shaders/ once, and nothing else."""
import glob, os, re, sys
root = sys.argv[1] if len(sys.argv) > 1 else '.'
def slugs(path):
    out = set()
    for line in open(path, encoding='utf-8'):
        m = re.match(r'#+\s+(.*)', line)
        if m:
            t = m.group(1).strip().lower()
            t = re.sub(r'[^\w\- ]', '', t)
            out.add(t.replace(' ', '-'))
    return out
bad = 0; n = 0
files = [os.path.join(root, 'README.md')] + sorted(glob.glob(os.path.join(root, 'docs', '*.md')))
for f in files:
    text = open(f, encoding='utf-8').read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)  # links in code blocks are not links
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'[a-z]+:', target):
            continue
        n += 1
        path, _, frag = target.partition('#')
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            print(f'{f}: {target}: no such file'); bad += 1
        elif frag and full.endswith('.md') and frag not in slugs(full):
            print(f'{f}: {target}: no heading #{frag}'); bad += 1
print(f'{n} relative links checked, {bad} broken')

readme = open(os.path.join(root, 'README.md'), encoding='utf-8').read()
section = readme.split('## Crate map', 1)[1].split('```text', 1)[1].split('```', 1)[0]
listed = [line.split()[0] for line in section.splitlines() if line.strip() and not line[0].isspace()]
tree = sorted(
    os.path.relpath(os.path.join(d, f), root)
    for top in ('src', 'shaders')
    for d, _, fs in os.walk(os.path.join(root, top))
    for f in fs
)
for path in sorted(set(tree) - set(listed)):
    print(f'crate map: {path} is missing'); bad += 1
for path in sorted(set(listed) - set(tree)):
    print(f'crate map: {path} is not in the tree'); bad += 1
for path in sorted({p for p in listed if listed.count(p) > 1}):
    print(f'crate map: {path} is listed twice'); bad += 1
print(f'crate map: {len(listed)} entries, {len(tree)} files')
sys.exit(1 if bad else 0)
