"""Bad input is a ValueError with a clear message (never a crash), through the
Python layer and straight into the native module."""

from __future__ import annotations

import numpy as np
import pytest

import raypick
from raypick import _raypick
from conftest import icosphere, scene_of

V, T = icosphere(1)


@pytest.fixture(scope="module")
def scene():
    return scene_of(V, T)


@pytest.mark.parametrize("vertices, triangles, message", [
    (V.astype(np.int32), T, "vertices must be float32 or float64"),
    (V.astype(np.float16), T, "float32 or float64"),
    (V[:, :2], T, r"vertices must have shape \(V, 3\)"),
    (V.reshape(-1), T, r"shape \(V, 3\)"),
    (np.zeros((0, 3), np.float32), T, "vertices is empty"),
    (V, np.zeros((0, 3), np.int64), "triangles is empty"),
    (V, T.astype(np.float32), "triangles must be an integer array"),
    (V, T[:, :2], r"triangles must have shape \(T, 3\)"),
    (V, np.vstack([T, [[0, 1, len(V)]]]), rf"triangles\[{len(T)}\] .* outside 0..{len(V) - 1}"),
    (V, np.vstack([T, [[0, -1, 2]]]), "outside"),
    (np.where(np.arange(len(V))[:, None] == 5, np.nan, V).astype(np.float32), T,
     r"vertices\[5\] has a NaN"),
    (np.where(np.arange(len(V))[:, None] == 2, np.inf, V), T, r"vertices\[2\] has a NaN or infinite"),
    ("not an array", None, "mesh object"),
])
def test_bad_meshes(vertices, triangles, message):
    scene = raypick.RaycastingScene(backend="cpu")
    with pytest.raises(ValueError, match=message):
        scene.add_triangles(vertices, triangles)
    assert len(scene) == 0


def ray_rows(value, column):
    rays = np.tile(np.float32([0, 0, 5, 0, 0, -1]), (4, 1))
    rays[2, column] = value
    return rays


@pytest.mark.parametrize("rays, message", [
    (np.zeros((3, 5), np.float32), r"rays must have shape \(..., 6 or 8\)"),
    (np.zeros((3, 6), np.int64), "rays must be float32 or float64"),
    (np.zeros((3, 6), np.complex64), "float32 or float64"),
    (np.float32(1.0), r"shape \(..., 6 or 8\)"),
    ([[0, 0, 0, "x", 0, 1]], "float32 or float64"),
    (ray_rows(np.nan, 0), r"rays\[2\] has a NaN or infinite origin or direction"),
    (ray_rows(np.inf, 4), r"rays\[2\] has a NaN or infinite"),
    (ray_rows(-np.inf, 5), r"rays\[2\]"),
])
def test_bad_rays(scene, rays, message):
    for query in (scene.cast_rays, scene.test_occlusions, scene.count_intersections,
                  scene.list_intersections):
        with pytest.raises(ValueError, match=message):
            query(rays)


def test_bad_ray_bounds(scene):
    rays = np.zeros((3, 8), np.float32)
    rays[:, 6] = 1
    rays[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"rays\[1\] has a NaN tmin or tmax"):
        scene.cast_rays(rays)
    with pytest.raises(ValueError, match="tnear and tfar"):
        scene.test_occlusions(rays[:, :6], tnear=np.nan)


@pytest.mark.parametrize("points, message", [
    (np.zeros((3, 2), np.float32), r"query_points must have shape \(..., 3\)"),
    (np.zeros((3, 3), np.int32), "query_points must be float32 or float64"),
    (np.array([[0, 0, 0], [np.nan, 0, 0]]), r"query_points\[1\] has a NaN or infinite"),
    (np.array([[0, np.inf, 0]], np.float32), r"query_points\[0\]"),
])
def test_bad_points(scene, points, message):
    for query in (scene.compute_closest_points, scene.compute_distance,
                  scene.compute_signed_distance, scene.compute_occupancy):
        with pytest.raises(ValueError, match=message):
            query(points)


@pytest.mark.parametrize("nsamples", [0, 2, 17, -1, 1.0, True])
def test_bad_nsamples(scene, nsamples):
    with pytest.raises(ValueError, match="nsamples"):
        scene.compute_occupancy(np.zeros((1, 3), np.float32), nsamples=nsamples)


def test_bad_scene_arguments():
    with pytest.raises(ValueError, match="backend must be one of"):
        raypick.RaycastingScene(backend="cuda")
    for nthreads in (-1, 1.5, "2"):
        with pytest.raises(ValueError, match="nthreads"):
            raypick.RaycastingScene(backend="cpu", nthreads=nthreads)


def test_an_empty_scene_says_so():
    scene = raypick.RaycastingScene(backend="cpu")
    with pytest.raises(ValueError, match="the scene is empty"):
        scene.cast_rays(np.zeros((1, 6), np.float32))
    with pytest.raises(ValueError, match="the scene is empty"):
        scene.compute_distance(np.zeros((1, 3), np.float32))


def test_only_degenerate_triangles_have_no_closest_point():
    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(np.float32([[0, 0, 0], [1, 0, 0], [2, 0, 0]]), [[0, 1, 2]])
    assert scene.cast_rays(np.float32([[1, 0, 1, 0, 0, -1]]))["t_hit"].tolist() == [np.inf]
    with pytest.raises(ValueError, match="no triangle with an area"):
        scene.compute_distance(np.zeros((1, 3), np.float32))


def test_bad_pinhole_arguments():
    make = raypick.RaycastingScene.create_rays_pinhole
    with pytest.raises(ValueError, match="fov_deg"):
        make(fov_deg=180, center=[0, 0, 0], eye=[0, 0, 1], up=[0, 1, 0], width_px=2, height_px=2)
    with pytest.raises(ValueError, match="parallel"):
        make(fov_deg=60, center=[0, 0, 0], eye=[0, 0, 1], up=[0, 0, 1], width_px=2, height_px=2)
    with pytest.raises(ValueError, match="width_px"):
        make(60, [0, 0, 0], [0, 0, 1], [0, 1, 0], 0, 2)
    with pytest.raises(ValueError, match="missing"):
        make(60, [0, 0, 0], [0, 0, 1])
    with pytest.raises(ValueError, match="singular"):
        make(np.zeros((3, 3)), np.eye(4), 4, 4)
    with pytest.raises(ValueError, match=r"extrinsic_matrix must have shape \(4, 4\)"):
        make(np.eye(3), np.eye(3), 4, 4)
    with pytest.raises(ValueError, match="dtype"):
        make(np.eye(3), np.eye(4), 4, 4, dtype=np.int32)


def test_the_native_module_checks_too():
    """Arrays handed straight to the extension module, bypassing the Python layer's
    checks: errors, never a crash."""
    scene = _raypick.Scene("cpu", 0)
    with pytest.raises(ValueError, match="backend"):
        _raypick.Scene("tpu", 0)
    with pytest.raises(ValueError, match="uses vertex 9"):
        scene.add_mesh(np.zeros((3, 3), np.float32), np.array([[0, 1, 9]], np.uint32))
    with pytest.raises(ValueError, match="no triangles"):
        scene.add_mesh(np.zeros((3, 3), np.float32), np.zeros((0, 3), np.uint32))
    with pytest.raises(ValueError, match=r"vertices\[1\]"):
        scene.add_mesh(np.float32([[0, 0, 0], [np.nan, 0, 0], [0, 1, 0]]),
                       np.array([[0, 1, 2]], np.uint32))
    with pytest.raises(TypeError):
        scene.add_mesh(np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int64))
    with pytest.raises(ValueError, match="C-contiguous"):
        scene.add_mesh(np.zeros((3, 6), np.float32)[:, ::2], np.array([[0, 1, 2]], np.uint32))
    assert scene.add_mesh(np.float32([[0, 0, 0], [1, 0, 0], [0, 1, 0]]),
                          np.array([[0, 1, 2]], np.uint32)) == 0
    with pytest.raises(ValueError, match="6 or 8 columns"):
        scene.cast_rays(np.zeros((2, 7), np.float32))
    with pytest.raises(ValueError, match="float32 or float64"):
        scene.cast_rays(np.zeros((2, 6), np.int32))
    with pytest.raises(ValueError, match="float32 or float64"):
        scene.cast_rays(np.zeros(6, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        scene.cast_rays(np.zeros((6, 2), np.float32).T)
    with pytest.raises(ValueError, match=r"rays\[0\]"):
        scene.cast_rays(np.float32([[np.nan, 0, 0, 0, 0, 1]]))
    with pytest.raises(ValueError, match="nsamples"):
        scene.occupancy(np.zeros((1, 3), np.float32), 4)
    with pytest.raises(ValueError, match=r"\(4, 4\)"):
        scene.set_transform(0, np.eye(3))
    with pytest.raises(ValueError, match="no geometry 3"):
        scene.set_transform(3, np.eye(4))
