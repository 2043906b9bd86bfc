"""Shared fixtures: generated meshes (closed ones for inside/outside), the real mesh
files of assimp's test models when installed, ray sets, the GPU scene (required
when RAYPICK_REQUIRE_GPU=1), and the report lines printed after the run."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import raypick

MODELS = Path("/usr/share/assimp/models")

# -- report ----------------------------------------------------------------------

_REPORT: list[str] = []


def report(line: str) -> None:
    """A line for the summary printed at the end of the run (counts, comparisons)."""
    _REPORT.append(line)


def pytest_terminal_summary(terminalreporter):
    if _REPORT:
        terminalreporter.section("raypick comparison report")
        for line in _REPORT:
            terminalreporter.write_line(line)


# -- meshes ----------------------------------------------------------------------


def icosphere(subdivisions: int, radius: float = 1.0, center=(0.0, 0.0, 0.0)):
    """A geodesic sphere: closed, counter-clockwise seen from outside; vertices
    computed in float64 and rounded to float32 once."""
    t = (1.0 + 5.0 ** 0.5) / 2.0
    verts = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t),
             (0, -1, -t), (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    verts = [np.array(v, dtype=np.float64) / np.linalg.norm(v) for v in verts]
    faces = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9),
             (5, 11, 4), (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2),
             (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
             (8, 6, 7), (9, 8, 1)]
    for _ in range(subdivisions):
        mid = {}

        def middle(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                m = verts[a] + verts[b]
                verts.append(m / np.linalg.norm(m))
                mid[key] = len(verts) - 1
            return mid[key]

        new = []
        for a, b, c in faces:
            ab, bc, ca = middle(a, b), middle(b, c), middle(c, a)
            new += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        faces = new
    v = (np.array(verts) * radius + np.asarray(center, dtype=np.float64)).astype(np.float32)
    return v, np.array(faces, dtype=np.int64)


def grid_cube(n: int):
    """The cube [-1, 1]^3 with every face an n x n grid of squares (two triangles
    each): closed, outward normals, every vertex on the lattice ``-1 + 2k/n`` (exact in
    float32 for a power of two ``n``) -- axis-aligned rays along grid lines pass
    exactly through its vertices and edges."""
    index = {}
    verts = []

    def vertex(p):
        if p not in index:
            index[p] = len(verts)
            verts.append(p)
        return index[p]

    faces = []
    for axis in range(3):
        for side in (0, n):
            b, c = (axis + 1) % 3, (axis + 2) % 3
            for i in range(n):
                for j in range(n):
                    quad = []
                    for di, dj in ((0, 0), (1, 0), (1, 1), (0, 1)):
                        p = [0, 0, 0]
                        p[axis], p[b], p[c] = side, i + di, j + dj
                        quad.append(vertex(tuple(p)))
                    tris = [(quad[0], quad[1], quad[2]), (quad[0], quad[2], quad[3])]
                    # (b, c, axis) is right-handed: this winding faces +axis.
                    if side == 0:
                        tris = [(x, z, y) for x, y, z in tris]
                    faces += tris
    v = (np.array(verts, dtype=np.float64) * (2.0 / n) - 1.0).astype(np.float32)
    return v, np.array(faces, dtype=np.int64)


def torus(R: float, r: float, nu: int, nv: int):
    """A torus around the z axis: closed, genus one, outward normals."""
    u = np.arange(nu) * (2 * np.pi / nu)
    w = np.arange(nv) * (2 * np.pi / nv)
    uu, ww = np.meshgrid(u, w, indexing="ij")
    x = (R + r * np.cos(ww)) * np.cos(uu)
    y = (R + r * np.cos(ww)) * np.sin(uu)
    z = r * np.sin(ww)
    v = np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)
    faces = []
    for i in range(nu):
        for j in range(nv):
            a = i * nv + j
            b = ((i + 1) % nu) * nv + j
            c = ((i + 1) % nu) * nv + (j + 1) % nv
            d = i * nv + (j + 1) % nv
            faces += [(a, b, c), (a, c, d)]
    return v, np.array(faces, dtype=np.int64)


def jittered(vertices, triangles, amount: float, seed: int):
    """The mesh with every vertex moved by up to ``amount`` (still closed)."""
    rng = np.random.default_rng(seed)
    v = vertices + rng.uniform(-amount, amount, size=vertices.shape).astype(np.float32)
    return v.astype(np.float32), triangles


def load_mesh(path: Path):
    """(vertices float32, triangles) of an OBJ/OFF/PLY/STL file read with trimesh
    (vertices merged), or None when it cannot be read (or trimesh is missing)."""
    try:
        import trimesh

        mesh = trimesh.load(str(path), force="mesh", process=True)
    except Exception:
        return None
    if not hasattr(mesh, "faces") or len(mesh.faces) == 0:
        return None
    return np.asarray(mesh.vertices, dtype=np.float32), np.asarray(mesh.faces, dtype=np.int64)


def closed_meshes():
    """Named closed meshes: generated ones, and the closed real ones of assimp's
    test models when they are installed."""
    meshes = {
        "icosphere(3)": icosphere(3),
        "grid cube 8x8": grid_cube(8),
        "torus": torus(1.0, 0.35, 48, 24),
        "jittered icosphere(2)": jittered(*icosphere(2), 0.01, 5),
        "offset icosphere(2)": icosphere(2, 0.75, (0.3, -0.2, 0.1)),
    }
    for name in ("OBJ/box.obj", "PLY/cube.ply", "OFF/Cube.off"):
        loaded = load_mesh(MODELS / name) if (MODELS / name).exists() else None
        if loaded is not None:
            meshes[f"assimp {name}"] = loaded
    return meshes


def rays_for(vertices, n: int, seed: int, dtype=np.float32):
    """Incoherent rays: origins on a sphere around the mesh, aimed at random points
    in its box, plus rays from inside the box in random directions."""
    rng = np.random.default_rng(seed)
    lo, hi = vertices.min(axis=0).astype(np.float64), vertices.max(axis=0).astype(np.float64)
    centre, radius = (lo + hi) / 2, np.linalg.norm(hi - lo)
    k = n // 2
    d = rng.normal(size=(k, 3))
    origins = centre + radius * d / np.linalg.norm(d, axis=1, keepdims=True)
    targets = lo + rng.random((k, 3)) * (hi - lo)
    outer = np.concatenate([origins, targets - origins], axis=1)
    inner_o = lo + rng.random((n - k, 3)) * (hi - lo)
    inner_d = rng.normal(size=(n - k, 3))
    inner = np.concatenate([inner_o, inner_d], axis=1)
    return np.concatenate([outer, inner]).astype(dtype)


def aimed_rays(vertices, triangles, n: int, seed: int, dtype=np.float32):
    """Rays from a sphere around the mesh aimed exactly at its vertices (half) and at
    the midpoints of its edges (half): where a ray can slip between triangles."""
    rng = np.random.default_rng(seed)
    v = vertices.astype(np.float64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    centre, radius = (lo + hi) / 2, np.linalg.norm(hi - lo)
    d = rng.normal(size=(n, 3))
    origins = centre + radius * d / np.linalg.norm(d, axis=1, keepdims=True)
    tri = triangles[rng.integers(0, len(triangles), n)]
    corner = rng.integers(0, 3, n)
    a = v[tri[np.arange(n), corner]]
    b = v[tri[np.arange(n), (corner + 1) % 3]]
    targets = np.where((np.arange(n) % 2 == 0)[:, None], a, (a + b) / 2)
    origins = origins.astype(dtype).astype(np.float64)
    return np.concatenate([origins, targets - origins], axis=1).astype(dtype)


# -- scenes ----------------------------------------------------------------------


def gpu_required() -> bool:
    return os.environ.get("RAYPICK_REQUIRE_GPU") == "1"


@pytest.fixture(scope="session")
def gpu_backend():
    """"gpu" when an adapter opens; a failure without one when RAYPICK_REQUIRE_GPU=1,
    else a skip."""
    try:
        raypick.RaycastingScene(backend="gpu")
    except RuntimeError as e:
        if gpu_required():
            pytest.fail(f"RAYPICK_REQUIRE_GPU=1 but no GPU adapter opens: {e}")
        pytest.skip(f"no GPU adapter (set RAYPICK_REQUIRE_GPU=1 to make this a failure): {e}")
    return "gpu"


def scene_of(vertices, triangles, backend="cpu", nthreads=0):
    scene = raypick.RaycastingScene(backend=backend, nthreads=nthreads)
    scene.add_triangles(vertices, triangles)
    return scene


def have(module: str) -> bool:
    try:
        __import__(module)
        return True
    except Exception:
        return False
