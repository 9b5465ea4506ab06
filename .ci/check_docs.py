#!/usr/bin/env python3
"""Checks README.md and docs/*.md: every relative link names a file that exists (and a
#fragment a heading of that file, by GitHub's slug rule), and the README's crate map lists
every file under src/ and shaders/ once, and nothing else.

Then the prose: in the comments and rustdoc of every tracked .rs and .wgsl file, in the
tracked Python scripts, in docs/ and in the README (not CHANGELOG.md or BENCHMARKS.md, which
are history), every quoted
  - path of the tree (src/..., shaders/..., tests/..., ...) exists (a path at another
    commit or in another crate is written rev:path or crate:path, and is not checked;
    a placeholder is written <name>);
  - file name (grid.rs, shared.wgsl) is the name of a tracked file;
  - module path (crate::<a>::<B>, sweepcast::<a>::<B>, sweepcast_mpi::<B>, testkit::<B>, and
    in the main crate's prose a backticked <a>::<b>::<C> for a module <a> of src/) names
    modules that exist, then an item its module defines or re-exports;
  - type in backticks (a CamelCase name) is defined in the tree or is one of the outside
    names of OUTSIDE below, each with its owner;
  - entry point (a backticked <name> "of" or "in" a backticked <x>.wgsl; "entry point"
    followed by a backticked <name>) is a function of that shader, or an entry point of one;
and every entry point of shaders/<x>.wgsl is a function of its twin src/cpu/<x>.rs, or is
named there in backticks with what stands in for it."""
import glob, os, re, subprocess, sys
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
def expand(path):
    """`dir/{a,b}.rs` names `dir/a.rs` and `dir/b.rs`."""
    m = re.fullmatch(r'(.*)\{([^}]*)\}(.*)', path)
    return [m.group(1) + part + m.group(3) for part in m.group(2).split(',')] if m else [path]


listed = [p for line in section.splitlines() if line.strip() and not line[0].isspace()
          for p in expand(line.split()[0])]
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

# --- The prose ---------------------------------------------------------------------------

# Names quoted in the prose that live outside the tree, and where.
OUTSIDE = {
    'Debug': 'std', 'Send': 'std', 'Option': 'std',
    'Pod': 'bytemuck', 'Serialize': 'serde', 'Deserialize': 'serde', 'DVec2': 'glam',
    'BaseException': 'Python', 'RuntimeError': 'Python', 'ValueError': 'Python',
    'MemoryError': 'Python', 'OverflowError': 'Python', 'DeprecationWarning': 'Python',
    'PanicException': 'PyO3', 'Universe': 'rsmpi',
    'KeyValueSorter': 'wgpu_sort', 'RadixVariant': 'wgpu_sort',
    'RadixElementCountLimitExceeded': 'wgpu_sort', 'WriteOnly': 'wgpu (a buffer mapping)',
    'InteractionGroups': 'rapier', 'Ball': 'parry', 'VmSize': 'Linux /proc/self/status',
    'BufferSize': 'vello',
}
TOPS = ('src', 'shaders', 'tests', 'examples', 'docs', 'benches', 'python', 'mpi', 'scripts',
        'testkit', 'fuzz', 'pictures', '.ci')
CRATES = {'sweepcast': 'src', 'sweepcast_mpi': 'mpi/src', 'testkit': 'testkit/src'}

def tracked():
    try:
        out = subprocess.run(['git', '-C', root, 'ls-files'], capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        out = [os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)
               if '/target' not in d and '/.git' not in d for f in fs]
    return [f for f in out if os.path.exists(os.path.join(root, f))]

files_all = tracked()
names = {os.path.basename(f) for f in files_all}
code = [f for f in files_all if f.endswith(('.rs', '.wgsl'))]
texts = {f: open(os.path.join(root, f), encoding='utf-8').read() for f in code}

def prose_lines(f):
    """(line number, prose) of a file: the comments of Rust and WGSL, the comments and
    docstrings of Python, all of Markdown."""
    text = texts[f] if f in texts else open(os.path.join(root, f), encoding='utf-8').read()
    in_docstring = False
    for number, line in enumerate(text.splitlines(), 1):
        if f.endswith(('.rs', '.wgsl')):
            at = line.find('//')
            if at < 0:
                continue
            line = line[at:]
        elif f.endswith('.py'):
            quotes = line.count('"""')
            if in_docstring or quotes:
                in_docstring = in_docstring != (quotes % 2 == 1)
            elif '#' in line:
                line = line[line.find('#'):]
            else:
                continue
        yield number, line

prose_files = [f for f in files_all
               if f.endswith(('.rs', '.wgsl', '.py')) or f == 'README.md'
               or (f.startswith('docs/') and f.endswith('.md'))]

# Every name the tree defines: items, fields and variants, modules, re-exports.
defined = set()
for f, text in texts.items():
    for keyword in ('fn', 'struct', 'enum', 'trait', 'type', 'const', 'static', 'mod', 'union',
                    'let', 'var', 'override', 'macro_rules!'):
        defined.update(m.group(1) for m in
                       re.finditer(r'\b' + re.escape(keyword) + r'\s*(?:r#)?([A-Za-z_]\w*)', text))
    defined.update(re.findall(r'^\s*(?:pub(?:\([^)]*\))?\s+)?([A-Za-z_]\w*)\s*[:({,]', text, re.M))
    defined.update(re.findall(r'\bclass\s+(\w+)', text))
    for m in re.finditer(r'\bpub use ([^;]*);', text, re.S):
        defined.update(re.findall(r'[A-Za-z_]\w*', m.group(1)))

def module_file(directory, name):
    for candidate in (os.path.join(directory, name + '.rs'),
                      os.path.join(directory, name, 'mod.rs')):
        if os.path.exists(os.path.join(root, candidate)):
            return candidate
    return None

def defines(path, name):
    text = texts.get(path) or open(os.path.join(root, path), encoding='utf-8').read()
    if re.search(r'\b(fn|struct|enum|trait|type|const|static|mod|union)\s+' + name + r'\b', text):
        return True
    for m in re.finditer(r'\bpub(?:\([^)]*\))? use ([^;]*);', text, re.S):
        if re.search(r'\b' + name + r'\b', m.group(1)) or m.group(1).strip().endswith('*'):
            return True
    return False

def resolve(crate_dir, segments):
    """The first segment of a module path that is not there, or None."""
    current = os.path.join(crate_dir, 'lib.rs')
    for segment in segments:
        here = os.path.dirname(current) if current.endswith(('lib.rs', 'mod.rs')) else current[:-3]
        found = module_file(here, segment)
        if found:
            current = found
            continue
        # An item of the module; what follows (a method, a variant) is checked loosely.
        if not defines(current, segment):
            return segment
        return None
    return None

def crate_of(f):
    for prefix, crate_dir in (('mpi/', 'mpi/src'), ('testkit/', 'testkit/src'),
                              ('python/', None), ('fuzz/', None)):
        if f.startswith(prefix):
            return crate_dir
    return 'src'

shader_functions = {}
entry_points = {}
for f in code:
    if f.startswith('shaders/'):
        shader_functions[os.path.basename(f)] = set(re.findall(r'\bfn\s+(\w+)', texts[f]))
        entry_points[f] = re.findall(r'@compute[^;{]*?\bfn\s+(\w+)', texts[f], re.S)
all_entry_points = {name for names_ in entry_points.values() for name in names_}
top_modules = sorted({n[:-3] if n.endswith('.rs') else n
                      for n in os.listdir(os.path.join(root, 'src')) if n != 'lib.rs'})

path_pattern = re.compile(r'(?<![\w/.:-])((?:\.\./)*(?:' + '|'.join(re.escape(t) for t in TOPS)
                          + r')/[\w./{},*-]*\w)')
prose_bad = 0
def report(f, number, what):
    global prose_bad
    print(f'{f}:{number}: {what}')
    prose_bad += 1

for f in prose_files:
    crate_dir = crate_of(f)
    for number, line in prose_lines(f):
        for m in path_pattern.finditer(line):
            for path in expand(m.group(1)):
                path = path.rstrip('.')
                if '*' in path or '/target' in path:
                    continue
                bases = ['', os.path.dirname(f), 'mpi', 'python', 'fuzz', 'testkit']
                if not any(os.path.exists(os.path.join(root, b, path)) for b in bases):
                    report(f, number, f'no such path: {path}')
        for m in re.finditer(r'(?<![\w/.:-])([A-Za-z_][\w-]*\.(?:wgsl|rs|md|py|toml))\b', line):
            if m.group(1) not in names and m.group(1) != 'docs.rs':
                report(f, number, f'no such file: {m.group(1)}')
        module_path = r'\b(crate|sweepcast_mpi|sweepcast|testkit)((?:::[A-Za-z_]\w*)+)'
        for m in re.finditer(module_path, line):
            base = crate_dir if m.group(1) == 'crate' else CRATES[m.group(1)]
            missing = base and resolve(base, m.group(2).split('::')[1:])
            if missing:
                report(f, number, f'{m.group(0)}: no {missing} there')
        if crate_dir == 'src' and not f.endswith('.py'):
            for m in re.finditer(r'`((?:' + '|'.join(top_modules) + r')(?:::[A-Za-z_]\w*)+)', line):
                missing = resolve('src', m.group(1).split('::'))
                if missing:
                    report(f, number, f'{m.group(1)}: no {missing} there')
        for m in re.finditer(r'`([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b', line):
            if m.group(1) not in defined and m.group(1) not in OUTSIDE:
                report(f, number, f'no type {m.group(1)} in the tree (or OUTSIDE)')
        for m in re.finditer(r'`(\w+)`\s+(?:of|in)\s+`?(?:shaders/)?(\w+\.wgsl)', line):
            name, shader = m.groups()
            if shader in shader_functions and name not in shader_functions[shader]:
                report(f, number, f'{shader} has no function {name}')
        for m in re.finditer(r'entry points?\s+`(\w+)`', line):
            if m.group(1) not in all_entry_points:
                report(f, number, f'no entry point {m.group(1)}')

for shader, points in sorted(entry_points.items()):
    twin = os.path.join('src', 'cpu', os.path.basename(shader)[:-5] + '.rs')
    if twin not in texts:
        continue
    for point in points:
        if not re.search(r'\bfn\s+' + point + r'\b|`' + point + r'`', texts[twin]):
            report(twin, 1, f'{shader}\'s entry point {point}: no function, no mention')

print(f'prose: {len(prose_files)} files read, {prose_bad} stale')
sys.exit(1 if bad or prose_bad else 0)
