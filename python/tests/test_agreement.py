"""Closest hits against trimesh + embreex and Open3D (both Embree, float32) on the same
meshes and rays: the same triangle with ``t`` within 1e-5 relative, except where the
difference is explained by an edge or vertex (the ray passes within rounding of a
triangle's boundary) or a tie (two triangles at the same ``t``). Every difference is
counted and explained; unexplained ones fail the test."""

from __future__ import annotations

import numpy as np
import pytest

import raypick
from conftest import MODELS, aimed_rays, grid_cube, icosphere, load_mesh, rays_for, report, torus

#: Barycentric distance to an edge within which a ray counts as "at an edge".
EDGE = 1e-4
#: Relative t tolerance.
RTOL = 1e-5


def meshes():
    out = {
        "icosphere(4)": icosphere(4),
        "torus": torus(1.0, 0.3, 64, 32),
        "grid cube 16x16": grid_cube(16),
    }
    for name in ("OFF/Wuson.off", "OBJ/spider.obj", "STL/3DSMaxExport.STL"):
        path = MODELS / name
        loaded = load_mesh(path) if path.exists() else None
        if loaded is not None:
            out[f"assimp {name}"] = loaded
    return out


MESHES = meshes()


def barycentric_margin(vertices, triangles, prim, uv):
    """min(u, v, 1-u-v) of each hit (inf for misses)."""
    u, v = uv[:, 0].astype(np.float64), uv[:, 1].astype(np.float64)
    margin = np.minimum(np.minimum(u, v), 1.0 - u - v)
    return np.where(prim == raypick.INVALID_ID, np.inf, margin)


def point_margin(vertices, triangles, prim, points):
    """min barycentric weight of ``points`` on triangles ``prim`` (inf for misses)."""
    out = np.full(len(prim), np.inf)
    ok = prim != raypick.INVALID_ID
    tri = vertices[triangles[prim[ok].astype(np.int64)]].astype(np.float64)
    p = points[ok]
    e1, e2, w = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0], p - tri[:, 0]
    n = np.cross(e1, e2)
    nn = np.einsum("ij,ij->i", n, n)
    u = np.einsum("ij,ij->i", n, np.cross(w, e2)) / nn
    v = np.einsum("ij,ij->i", n, np.cross(e1, w)) / nn
    out[ok] = np.minimum(np.minimum(u, v), 1 - u - v)
    return out


def float32_t_error(vertices, triangles, rays, prim):
    """A bound on the error of a float32 ``t`` for the triangle ``prim`` of each ray (0
    for misses): a few units in the last place of the coordinates involved, in ``t``
    units, divided by the cosine between the ray and the triangle's plane normal (grazing
    rays have ill-conditioned ``t``)."""
    out = np.zeros(len(rays))
    ok = prim != raypick.INVALID_ID
    tri = vertices[triangles[prim[ok].astype(np.int64)]].astype(np.float64)
    o, d = rays[ok, :3].astype(np.float64), rays[ok, 3:].astype(np.float64)
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    dn = np.linalg.norm(d, axis=1)
    cos = np.abs(np.einsum("ij,ij->i", n, d)) / (np.linalg.norm(n, axis=1) * dn)
    scale = np.maximum(np.abs(o).max(axis=1), np.abs(tri).max(axis=(1, 2)))
    out[ok] = 64 * 2.0**-24 * scale / dn / np.maximum(cos, 1e-6)
    return out


def edge_margin(vertices, triangles, rays, prim):
    """The barycentric margin within which a hit on triangle ``prim`` counts as at an
    edge: ``EDGE``, or more where float32 rounding of the hit point (in units of the
    triangle's smallest height; large at grazing angles) is larger."""
    out = np.full(len(rays), EDGE)
    ok = prim != raypick.INVALID_ID
    tri = vertices[triangles[prim[ok].astype(np.int64)]].astype(np.float64)
    area2 = np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    longest = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
    height = area2 / longest
    error = float32_t_error(vertices, triangles, rays, prim)[ok] \
        * np.linalg.norm(rays[ok, 3:].astype(np.float64), axis=1)
    out[ok] = np.maximum(EDGE, error / height)
    return out


def compare(name, library, vertices, triangles, rays, ours, prim, t, max_differ=0.002):
    """Counts and explains the differences between our hits and another library's
    (``prim``: their triangle or INVALID_ID, ``t``: theirs or inf)."""
    miss = raypick.INVALID_ID
    our_prim, our_t = ours["primitive_ids"], ours["t_hit"].astype(np.float64)
    both = (our_prim != miss) & (prim != miss)
    gap = np.where(both, np.abs(our_t - np.where(both, t, 0)), np.inf)
    close_t = gap <= RTOL * np.abs(np.where(both, t, 1))
    agree = ((our_prim == miss) & (prim == miss)) | ((our_prim == prim) & close_t)
    differ = ~agree
    ours_edge = barycentric_margin(vertices, triangles, our_prim, ours["primitive_uvs"]) \
        < edge_margin(vertices, triangles, rays, our_prim)
    # Their hit point, on their triangle.
    points = rays[:, :3].astype(np.float64) + np.where(np.isfinite(t), t, 0)[:, None] \
        * rays[:, 3:].astype(np.float64)
    theirs_edge = point_margin(vertices, triangles, prim, points) \
        < edge_margin(vertices, triangles, rays, prim)
    edge = differ & (ours_edge | theirs_edge)
    # Both hit, t apart by no more than float32 rounding allows: a tie or near tie
    # between two triangles, or the same triangle hit at a grazing angle.
    bound = np.maximum(float32_t_error(vertices, triangles, rays, our_prim),
                       float32_t_error(vertices, triangles, rays, prim))
    rounding = differ & ~edge & both & (gap <= np.maximum(bound, RTOL * np.abs(np.where(both, t, 1))))
    tie = rounding & (our_prim != prim)
    grazing = rounding & (our_prim == prim)
    unexplained = differ & ~edge & ~rounding
    leaks = differ & (prim == miss) & (our_prim != miss)
    same = (our_prim == prim) & both
    worst = np.max(gap[same] / np.abs(t[same]), initial=0)
    report(f"cast_rays vs {library:15s} {name:45s} {len(rays)} rays: agree {agree.sum()}, "
           f"differ {differ.sum()} (at an edge/vertex {edge.sum()} -- of which they miss where "
           f"raypick hits {(edge & leaks).sum()} --, tie {tie.sum()}, same triangle at a grazing "
           f"angle {grazing.sum()}, unexplained {unexplained.sum()}); same triangle: max t rel "
           f"diff {worst:.1e}")
    assert unexplained.sum() == 0, (
        f"{library}: {unexplained.sum()} unexplained differences, first rays "
        f"{np.flatnonzero(unexplained)[:10]}")
    assert differ.mean() <= max_differ, f"{library}: {differ.mean():.2%} of the rays differ"
    return same


@pytest.mark.parametrize("name", list(MESHES))
def test_against_trimesh_embree(name):
    trimesh = pytest.importorskip("trimesh")
    pytest.importorskip("embreex")
    from trimesh.ray.ray_pyembree import RayMeshIntersector

    vertices, triangles = MESHES[name]
    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(vertices, triangles)
    mesh = trimesh.Trimesh(vertices, triangles, process=False)
    intersector = RayMeshIntersector(mesh, scale_to_box=False)
    for kind, rays, max_differ in (
            ("random", rays_for(vertices, 20000, 11), 0.002),
            ("at vertices/edges", aimed_rays(vertices, triangles, 4000, 21), 1.0)):
        ours = scene.cast_rays(rays)
        tri, ray, loc = intersector.intersects_id(rays[:, :3], rays[:, 3:], multiple_hits=False,
                                                  return_locations=True)
        prim = np.full(len(rays), raypick.INVALID_ID, dtype=np.uint32)
        t = np.full(len(rays), np.inf)
        prim[ray] = tri
        d = rays[ray, 3:].astype(np.float64)
        t[ray] = np.einsum("ij,ij->i", loc - rays[ray, :3], d) / np.einsum("ij,ij->i", d, d)
        compare(f"{name}, {kind}", "trimesh+embreex", vertices, triangles, rays, ours, prim, t,
                max_differ)


@pytest.mark.parametrize("name", list(MESHES))
def test_against_open3d(name):
    o3d = pytest.importorskip("open3d")
    vertices, triangles = MESHES[name]
    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(vertices, triangles)
    theirs = o3d.t.geometry.RaycastingScene()
    theirs.add_triangles(o3d.core.Tensor(vertices), o3d.core.Tensor(triangles.astype(np.uint32)))
    aimed = aimed_rays(vertices, triangles, 4000, 22)
    hits = {k: v.numpy() for k, v in theirs.cast_rays(o3d.core.Tensor(aimed)).items()}
    compare(f"{name}, at vertices/edges", "open3d", vertices, triangles, aimed,
            scene.cast_rays(aimed), hits["primitive_ids"], hits["t_hit"].astype(np.float64), 1.0)

    rays = rays_for(vertices, 20000, 12)
    ours = scene.cast_rays(rays)
    hits = {k: v.numpy() for k, v in theirs.cast_rays(o3d.core.Tensor(rays)).items()}
    same = compare(f"{name}, random", "open3d", vertices, triangles, rays, ours,
                   hits["primitive_ids"], hits["t_hit"].astype(np.float64))
    # The same normals (Open3D normalises Embree's float32 geometric normal; ours is
    # computed in float64) and barycentric weights (to float32 rounding; more at
    # grazing angles).
    np.testing.assert_allclose(ours["primitive_normals"][same], hits["primitive_normals"][same],
                               atol=1e-4)
    uv_gap = np.abs(ours["primitive_uvs"][same] - hits["primitive_uvs"][same]).max(axis=1)
    assert np.mean(uv_gap > 1e-4) < 1e-3 and uv_gap.max() < 1e-2


def test_closest_points_against_open3d():
    o3d = pytest.importorskip("open3d")
    vertices, triangles = torus(1.0, 0.3, 48, 24)
    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(vertices, triangles)
    points = np.random.default_rng(13).uniform(-2, 2, (20000, 3)).astype(np.float32)
    ours = scene.compute_closest_points(points)
    theirs = o3d.t.geometry.RaycastingScene()
    theirs.add_triangles(o3d.core.Tensor(vertices), o3d.core.Tensor(triangles.astype(np.uint32)))
    found = {k: v.numpy() for k, v in theirs.compute_closest_points(o3d.core.Tensor(points)).items()}
    d_ours = np.linalg.norm(ours["points"].astype(np.float64) - points, axis=1)
    d_theirs = np.linalg.norm(found["points"].astype(np.float64) - points, axis=1)
    np.testing.assert_allclose(d_ours, d_theirs, rtol=1e-5, atol=1e-6)
    same = (ours["primitive_ids"] == found["primitive_ids"]).mean()
    report(f"compute_closest_points vs open3d, torus, 20000 points: distances within 1e-5 "
           f"relative; same triangle for {same:.2%} (the others are ties: the closest point is "
           f"on an edge or vertex shared by several triangles, where raypick names the lowest)")
    np.testing.assert_allclose(scene.compute_distance(points), d_ours, atol=1e-6)
