#!/usr/bin/env python3
"""The import drawing of the crate: which room imports which.

A room is a top-level module of src/ (server/ and cli/ one level deeper).
Prints each room's imports (`use` and paths through `crate::`/`super::`,
outside test modules and comments), the circles among rooms, and the floors
(a room sits one floor above the highest room it imports).

    python3 scripts/imports.py [SRC]      exit 1 when there is a circle

Then the same among files: a file imports the deepest module file a path
of it names. A module's own file (mod.rs) naming its children is their
front door, not a dependency, and is left out; every other circle of files,
inside a room or across, is printed, and fails too.
"""
import os, re, sys, collections
root = sys.argv[1] if len(sys.argv) > 1 else 'src'
DEEP = {'server', 'cli'}
def room_of(parts):
    if not parts: return None
    if parts[0] in DEEP and len(parts) > 1: return parts[0] + '/' + parts[1]
    return parts[0]
def file_room(path):
    rel = os.path.relpath(path, root)[:-3].split('/')
    if rel[-1] == 'mod': rel = rel[:-1]
    if rel in (['lib'], ['main']): return rel[0]
    return room_of(rel)
use_re = re.compile(r'\buse\s+((?:crate|super|self|robotgate)(?:::[\w{}, :*\n]+)?);', re.S)
edges = collections.defaultdict(set)
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p = os.path.join(dp, f); src = open(p).read()
        cut = src.find('#[cfg(test)]\nmod tests')
        if cut >= 0: src = src[:cut]
        src = '\n'.join(l for l in src.split('\n') if not l.lstrip().startswith('//'))
        me = file_room(p)
        rel = os.path.relpath(p, root)[:-3].split('/')
        if rel[-1] == 'mod': rel = rel[:-1]
        for m in re.finditer(r'(?<![\w:])(crate|robotgate)::(\w+)(?:::(\w+))?', src):
            parts=[m.group(2)] + ([m.group(3)] if m.group(3) else [])
            r=room_of(parts)
            if r and r!=me and (os.path.exists(os.path.join(root,r)) or os.path.exists(os.path.join(root,r+'.rs'))): edges[me].add(r)
        for m in re.finditer(r'(?<![\w:])super::(\w+)', src):
            parts=rel[:-2]+[m.group(1)] if p.endswith('mod.rs') else rel[:-1]+[m.group(1)]
            if p.endswith('mod.rs'): parts=rel[:-1]+[m.group(1)]
            r=room_of(parts)
            if r and r!=me and (os.path.exists(os.path.join(root,r)) or os.path.exists(os.path.join(root,r+'.rs'))): edges[me].add(r)
        for m in use_re.finditer(src):
            path = m.group(1)
            # expand simple braces at first level
            head, _, rest = path.partition('::')
            segs = []
            if head in ('crate', 'robotgate'): base = []
            elif head == 'super': base = rel[:-1] if not p.endswith('mod.rs') else rel[:-1]
            elif head == 'self': base = rel if p.endswith('mod.rs') or rel[-1] in ('lib','main') else rel
            else: continue
            if head == 'super' and not p.endswith('mod.rs'): base = rel[:-1]
            if head == 'super' and p.endswith('mod.rs'): base = rel[:-1]
            # rest may start with {a, b::c}
            rest = rest.strip()
            if rest.startswith('{'):
                inner = rest[1:rest.rfind('}')]
                depth=0; cur=''; items=[]
                for ch in inner:
                    if ch=='{': depth+=1
                    if ch=='}': depth-=1
                    if ch==',' and depth==0: items.append(cur); cur=''
                    else: cur+=ch
                items.append(cur)
                tails=[i.strip() for i in items if i.strip()]
            else: tails=[rest]
            for t in tails:
                parts = base + [s for s in re.split(r'::', t) if s and not s.startswith('{')]
                parts = [x.strip() for x in parts]
                if rel[0] in ('lib','main') and head=='self': parts = t.split('::')
                r = room_of(parts)
                if r and r != me and r not in ('self',):
                    if os.path.exists(os.path.join(root, r)) or os.path.exists(os.path.join(root, r + '.rs')):
                        edges[me].add(r)
rooms = sorted(set(edges) | {x for v in edges.values() for x in v})
for r in rooms: print(f'{r:22} -> {", ".join(sorted(edges[r]))}')
# circles: strongly connected components (Tarjan) of a graph {node: set of nodes}
sys.setrecursionlimit(10000)
def circles(graph, nodes):
    idx = {}; low = {}; st = []; on = set(); found = []; c = [0]
    def visit(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in graph[v]:
            if w not in idx: visit(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1: found.append(sorted(comp))
    for v in nodes:
        if v not in idx: visit(v)
    return found
sccs = circles(edges, rooms)
print('circles:', sccs if sccs else 'none')
# floors: longest path from leaves
floor={}
def fl(v, seen=()):
    if v in floor: return floor[v]
    if v in seen: return 0
    floor[v] = 1 + max([fl(w, seen+(v,)) for w in edges[v]] or [0]); return floor[v]
for v in rooms: fl(v)
print('floors:'); 
for f in sorted(set(floor.values())): print(' ', f, ' '.join(sorted(r for r in rooms if floor[r]==f)))
print('rooms', len(rooms), 'arrows', sum(len(v) for v in edges.values()))

# Files: each path resolved to the deepest module file that exists.
def mod_of(path):
    rel = os.path.relpath(path, root)[:-3].split('/')
    if rel[-1] == 'mod': rel = rel[:-1]
    if rel in (['lib'], ['main']): return []
    return rel
def file_of(parts):
    for n in range(len(parts), 0, -1):
        for cand in ('/'.join(parts[:n]) + '.rs', '/'.join(parts[:n]) + '/mod.rs'):
            if os.path.exists(os.path.join(root, cand)): return cand
    return None
fedges = collections.defaultdict(set)
path_re = re.compile(r'(?<![\w:])(crate|robotgate|super|self)((?:::\w+)+)')
for dp, _, fs in os.walk(root):
    for f in fs:
        if not f.endswith('.rs'): continue
        p = os.path.join(dp, f); src = open(p).read()
        cut = src.find('#[cfg(test)]')
        if cut >= 0 and 'mod tests' in src[cut:cut + 200]: src = src[:cut]
        src = '\n'.join(l for l in src.split('\n') if not l.lstrip().startswith('//'))
        me = os.path.relpath(p, root); mod = mod_of(p)
        # `use a::{b, c::d}`: expand one level of braces into paths.
        flat = []
        for m in use_re.finditer(src):
            head, _, rest = m.group(1).partition('::'); rest = rest.strip()
            if rest.startswith('{'):
                inner = rest[1:rest.rfind('}')]; depth = 0; cur = ''; items = []
                for ch in inner:
                    if ch == '{': depth += 1
                    if ch == '}': depth -= 1
                    if ch == ',' and depth == 0: items.append(cur); cur = ''
                    else: cur += ch
                items.append(cur)
                flat += [head + '::' + i.strip().split('::{')[0] for i in items if i.strip()]
            else: flat.append(head + '::' + rest.split('::{')[0])
        flat += [m.group(1) + m.group(2) for m in path_re.finditer(src)]
        for text in flat:
            segs = [x.strip() for x in text.split('::') if x.strip() and x.strip() not in ('*',)]
            if not segs: continue
            head = segs[0]
            if head in ('crate', 'robotgate'): parts = segs[1:]
            elif head == 'self': parts = mod + segs[1:]
            elif head == 'super':
                base = mod[:]; i = 0
                while i < len(segs) and segs[i] == 'super': base = base[:-1]; i += 1
                parts = base + segs[i:]
            else: continue
            parts = [x.split(' as ')[0].strip() for x in parts]
            target = file_of(parts)
            if not target or target == me: continue
            # A module's file naming its own children: their front door.
            if me.endswith('mod.rs') and target.startswith(os.path.dirname(me) + '/'): continue
            if me in ('lib.rs', 'main.rs'): continue
            fedges[me].add(target)
files = sorted(set(fedges) | {x for v in fedges.values() for x in v})
fsccs = circles(fedges, files)
print('file circles:', fsccs if fsccs else 'none')
print('files', len(files), 'arrows', sum(len(v) for v in fedges.values()))
sys.exit(1 if sccs or fsccs else 0)
