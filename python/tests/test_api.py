"""The API contract: result keys, shapes and dtypes (Open3D's), the hit convention,
float64 exactness, instances, pickling, threads and the GIL, and CPU/GPU parity."""

from __future__ import annotations

import pickle
import threading
import time

import numpy as np
import pytest

import raypick
from conftest import grid_cube, icosphere, rays_for, scene_of, torus

SQUARE_V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.float32)
SQUARE_T = np.array([[0, 1, 2], [0, 2, 3]])


def bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def test_cast_rays_follows_the_hit_convention():
    scene = scene_of(SQUARE_V, SQUARE_T)
    rays = np.array([[0.75, 0.25, 2, 0, 0, -2], [5, 5, 5, 0, 0, -1], [0.25, 0.75, -1, 0, 0, 1]],
                    dtype=np.float32)
    hits = scene.cast_rays(rays)
    assert set(hits) == {"t_hit", "geometry_ids", "primitive_ids", "primitive_uvs",
                         "primitive_normals"}
    assert hits["t_hit"].tolist() == [1.0, np.inf, 1.0]
    assert hits["geometry_ids"].tolist() == [0, raypick.INVALID_ID, 0]
    assert hits["primitive_ids"].tolist() == [0, raypick.INVALID_ID, 1]
    assert hits["primitive_uvs"].tolist() == [[0.5, 0.25], [0, 0], [0.25, 0.5]]
    assert hits["primitive_normals"].tolist() == [[0, 0, 1], [0, 0, 0], [0, 0, 1]]
    # Hit point = (1-u-v)*v0 + u*v1 + v*v2 = origin + t*dir.
    u, v = hits["primitive_uvs"][0]
    v0, v1, v2 = SQUARE_V[SQUARE_T[0]]
    np.testing.assert_allclose((1 - u - v) * v0 + u * v1 + v * v2,
                               rays[0, :3] + hits["t_hit"][0] * rays[0, 3:])
    assert raypick.RaycastingScene.INVALID_ID == 2**32 - 1


def test_shapes_and_dtypes_follow_open3d():
    v, t = icosphere(2)
    scene = scene_of(v, t)
    rays = rays_for(v, 4 * 5 * 7, 1).reshape(4, 5, 7, 6)
    hits = scene.cast_rays(rays)
    assert hits["t_hit"].shape == (4, 5, 7) and hits["t_hit"].dtype == np.float32
    assert hits["geometry_ids"].dtype == np.uint32 and hits["primitive_ids"].dtype == np.uint32
    assert hits["primitive_uvs"].shape == (4, 5, 7, 2)
    assert hits["primitive_normals"].shape == (4, 5, 7, 3)
    occluded = scene.test_occlusions(rays)
    assert occluded.shape == (4, 5, 7) and occluded.dtype == np.bool_
    counts = scene.count_intersections(rays)
    assert counts.shape == (4, 5, 7) and counts.dtype == np.int32
    listed = scene.list_intersections(rays)
    assert listed["ray_splits"].shape == (4 * 5 * 7 + 1,)
    assert all(listed[k].dtype == np.uint32 for k in ("ray_splits", "ray_ids", "geometry_ids",
                                                      "primitive_ids"))
    assert listed["primitive_uvs"].shape == (listed["t_hit"].shape[0], 2)
    points = rays[..., :3]
    closest = scene.compute_closest_points(points)
    assert closest["points"].shape == (4, 5, 7, 3) and closest["points"].dtype == np.float32
    assert scene.compute_distance(points).shape == (4, 5, 7)
    assert scene.compute_occupancy(points).dtype == np.float32
    assert scene.compute_signed_distance(points.astype(np.float64)).dtype == np.float64
    # One ray, no leading dimensions.
    assert scene.cast_rays(rays[0, 0, 0])["t_hit"].shape == ()
    # An empty batch.
    assert scene.cast_rays(np.zeros((0, 6), np.float32))["t_hit"].shape == (0,)
    assert scene.list_intersections(np.zeros((0, 6), np.float32))["ray_splits"].tolist() == [0]


def test_queries_agree_with_each_other():
    v, t = torus(1.0, 0.3, 40, 20)
    scene = scene_of(v, t)
    rays = rays_for(v, 5000, 2)
    hits = scene.cast_rays(rays)
    hit = hits["primitive_ids"] != raypick.INVALID_ID
    np.testing.assert_array_equal(scene.test_occlusions(rays), hit)
    counts = scene.count_intersections(rays)
    np.testing.assert_array_equal(counts > 0, hit)
    listed = scene.list_intersections(rays)
    splits = listed["ray_splits"]
    np.testing.assert_array_equal(np.diff(splits), counts)
    first = splits[:-1][hit]
    np.testing.assert_array_equal(listed["primitive_ids"][first], hits["primitive_ids"][hit])
    np.testing.assert_array_equal(listed["t_hit"][first], hits["t_hit"][hit])
    np.testing.assert_array_equal(listed["ray_ids"], np.repeat(np.arange(len(rays)), counts))
    # Sorted by t within each ray.
    for i in np.flatnonzero(counts > 1)[:200]:
        t_i = listed["t_hit"][splits[i]:splits[i + 1]]
        assert np.all(np.diff(t_i) >= 0)
    # A torus is crossed an even number of times by rays from outside.
    assert np.all(counts[:2500] % 2 == 0)


def test_occlusion_interval():
    scene = scene_of(SQUARE_V, SQUARE_T)
    rays = np.array([[0.5, 0.25, 2, 0, 0, -1]] * 4, dtype=np.float32)
    assert scene.test_occlusions(rays, tnear=0, tfar=2).all()
    assert not scene.test_occlusions(rays, tnear=0, tfar=1.5).any()
    assert not scene.test_occlusions(rays, tnear=2.5).any()


def test_raypick_ray_layout_and_intervals():
    v, t = icosphere(2)
    scene = scene_of(v, t)
    rays6 = rays_for(v, 1000, 3)
    rays8 = np.zeros((1000, 8), np.float32)
    rays8[:, :3], rays8[:, 4:7], rays8[:, 7] = rays6[:, :3], rays6[:, 3:], np.inf
    a, b = scene.cast_rays(rays6), scene.cast_rays(rays8)
    for key in a:
        assert bits(a[key]) == bits(b[key]), key
    # tmax before the first hit: a miss.
    rays8[:, 7] = np.where(np.isfinite(a["t_hit"]), a["t_hit"] * 0.5, np.inf)
    assert (scene.cast_rays(rays8)["primitive_ids"] == raypick.INVALID_ID).all()


def test_strided_big_endian_and_float64_inputs():
    v, t = icosphere(2)
    scene = scene_of(v, t)
    rays = rays_for(v, 500, 4)
    want = scene.cast_rays(rays)
    wide = np.zeros((500, 12), np.float32)
    wide[:, ::2] = rays  # a strided view
    got = scene.cast_rays(wide[:, ::2])
    assert bits(got["t_hit"]) == bits(want["t_hit"])
    got = scene.cast_rays(rays.astype(">f4"))
    assert bits(got["t_hit"]) == bits(want["t_hit"])
    # float64 rays holding float32 values give the same hits.
    got = scene.cast_rays(rays.astype(np.float64))
    assert bits(got["t_hit"]) == bits(want["t_hit"])


def test_float64_scenes_far_from_the_origin_trace_like_at_the_origin():
    # The translation guarantee (docs/contracts.md 1.8): a shift by multiples of the
    # mesh's grid step (2 here) where every shifted coordinate is exact in float64 --
    # coordinates on a 2^-20 grid, shifted by at most 2^24, need 45 bits.
    def grid(a):
        return np.round(a.astype(np.float64) * 2.0**20) / 2.0**20

    v, t = icosphere(3)
    v = grid(v)
    near = scene_of(v, t)
    shift = np.array([1e7, -3e6, 5e5])
    far = scene_of(v + shift, t)
    rays = rays_for(v, 3000, 5).astype(np.float64)
    rays[:, :3] = grid(rays[:, :3])
    moved = rays.copy()
    moved[:, :3] += shift
    a, b = near.cast_rays(rays), far.cast_rays(moved)
    for key in a:
        assert bits(a[key]) == bits(b[key]), key
    # In float32 the far sphere is a blur: 1e7 has float32 steps of 1.
    blurred = scene_of((v + shift).astype(np.float32), t)
    hit32 = blurred.cast_rays(moved.astype(np.float32))["primitive_ids"]
    assert (hit32 != a["primitive_ids"]).mean() > 0.05
    # Closest points and occupancy keep the precision too.
    points = rays[:300, :3] * 0.4
    moved_points = points + shift
    np.testing.assert_allclose(far.compute_distance(moved_points), near.compute_distance(points),
                               atol=1e-9)
    np.testing.assert_array_equal(far.compute_occupancy(moved_points),
                                  near.compute_occupancy(points))
    closest = far.compute_closest_points(moved_points)["points"]
    assert closest.dtype == np.float64
    np.testing.assert_allclose(closest - shift,
                               near.compute_closest_points(points)["points"], atol=1e-9)


def test_several_geometries_ids_and_ties():
    v, t = SQUARE_V, SQUARE_T
    scene = raypick.RaycastingScene(backend="cpu")
    assert scene.add_triangles(v + np.float32([0, 0, 1]), t) == 0
    assert scene.add_triangles(v, t) == 1
    assert scene.add_triangles(v, t) == 2  # the same square again: ties
    assert len(scene) == 3
    rays = np.array([[0.75, 0.25, 5, 0, 0, -1], [0.75, 0.25, 0.5, 0, 0, -1]], np.float32)
    hits = scene.cast_rays(rays)
    assert hits["geometry_ids"].tolist() == [0, 1]
    assert hits["primitive_ids"].tolist() == [0, 0]
    listed = scene.list_intersections(rays[:1])
    assert listed["geometry_ids"].tolist() == [0, 1, 2]
    assert listed["t_hit"].tolist() == [4, 5, 5]
    closest = scene.compute_closest_points(np.array([[0.25, 0.75, 0.4]], np.float32))
    assert closest["geometry_ids"].tolist() == [1]  # tie between 1 and 2: the lowest
    assert closest["primitive_ids"].tolist() == [1]


def test_mesh_objects_are_accepted():
    trimesh = pytest.importorskip("trimesh")
    box = trimesh.creation.box()
    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(box)
    rays = np.array([[0, 0, 5, 0, 0, -1]], np.float32)
    assert scene.cast_rays(rays)["t_hit"].tolist() == [4.5]


def test_instances():
    v, t = grid_cube(2)
    scene = raypick.RaycastingScene(backend="cpu")
    base = scene.add_triangles(v, t)
    moved = np.eye(4)
    moved[:3, 3] = [10, 0, 0]
    copy = scene.add_instance(base, moved)
    assert (base, copy) == (0, 1)
    rays = np.array([[0, 0, 5, 0, 0, -1], [10, 0, 5, 0, 0, -1], [20, 0, 5, 0, 0, -1]], np.float32)
    hits = scene.cast_rays(rays)
    assert hits["geometry_ids"].tolist() == [0, 1, raypick.INVALID_ID]
    assert hits["t_hit"].tolist() == [4, 4, np.inf]
    np.testing.assert_allclose(hits["primitive_normals"][1], [0, 0, 1])
    assert scene.test_occlusions(rays).tolist() == [True, True, False]
    # Moving a placement; a mirrored, scaled one keeps its normals outward.
    moved[:3, 3] = [20, 0, 0]
    moved[2, 2] = -2
    scene.set_transform(copy, moved)
    hits = scene.cast_rays(rays)
    assert hits["geometry_ids"].tolist() == [0, raypick.INVALID_ID, 1]
    assert hits["t_hit"].tolist() == [4, np.inf, 3]
    np.testing.assert_allclose(hits["primitive_normals"][2], [0, 0, 1])
    with pytest.raises(NotImplementedError, match="instances"):
        scene.compute_occupancy(np.zeros((1, 3), np.float32))
    with pytest.raises(NotImplementedError):
        scene.list_intersections(rays)
    for bad, message in ((np.diag([1.0, 1.0, 0.0, 1.0]), "singular"), (np.ones((4, 4)), "affine"),
                         (np.full((4, 4), np.nan), "NaN"), (np.eye(3), "shape")):
        with pytest.raises(ValueError, match=message):
            scene.set_transform(copy, bad)
    with pytest.raises(ValueError, match="no geometry 7"):
        scene.add_instance(7, np.eye(4))
    # Pickled with its instances.
    again = pickle.loads(pickle.dumps(scene))
    for key, value in again.cast_rays(rays).items():
        assert bits(value) == bits(hits[key]), key


def test_pickle_round_trip():
    v, t = torus(1.0, 0.3, 24, 12)
    scene = raypick.RaycastingScene(backend="cpu", nthreads=1)
    scene.add_triangles(v, t)
    scene.add_triangles(v.astype(np.float64) + 3.0, t)
    again = pickle.loads(pickle.dumps(scene))
    assert len(again) == 2
    rays = rays_for(v, 2000, 6)
    a, b = scene.cast_rays(rays), again.cast_rays(rays)
    for key in a:
        assert bits(a[key]) == bits(b[key]), key


def test_create_rays_pinhole():
    rays = raypick.RaycastingScene.create_rays_pinhole(
        fov_deg=90, center=[0, 0, 0], eye=[0, 0, 5], up=[0, 1, 0], width_px=4, height_px=2)
    assert rays.shape == (2, 4, 6) and rays.dtype == np.float32
    np.testing.assert_array_equal(rays[..., :3], np.broadcast_to([0, 0, 5], (2, 4, 3)))
    # Unit depth along the view direction: t_hit is the depth.
    np.testing.assert_allclose(rays[..., 5], -1.0)
    # Horizontal field of view 90 degrees: the outermost pixel centres at 0.75 of the
    # half-width tangent.
    np.testing.assert_allclose(np.abs(rays[0, [0, 3], 3]), 0.75)
    intrinsic = np.array([[100.0, 0, 32], [0, 100, 24], [0, 0, 1]])
    extrinsic = np.eye(4)
    extrinsic[:3, 3] = [0, 0, 3]
    r = raypick.RaycastingScene.create_rays_pinhole(intrinsic, extrinsic, 64, 48,
                                                    dtype=np.float64)
    assert r.shape == (48, 64, 6) and r.dtype == np.float64
    np.testing.assert_allclose(r[0, 0], [0, 0, -3, (0.5 - 32) / 100, (0.5 - 24) / 100, 1])
    scene = scene_of(*grid_cube(2))
    depth = scene.cast_rays(r)["t_hit"]
    np.testing.assert_allclose(depth[24, 32], 2.0)  # the cube's face z = -1 from z = -3


def test_create_rays_pinhole_matches_open3d():
    o3d = pytest.importorskip("open3d")
    args = dict(fov_deg=63.0, center=[0.2, 0.1, -0.3], eye=[2.0, 3.0, 1.5], up=[0, 0, 1],
                width_px=37, height_px=23)
    ours = raypick.RaycastingScene.create_rays_pinhole(**args)
    theirs = o3d.t.geometry.RaycastingScene.create_rays_pinhole(**args).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    intrinsic = np.array([[80.0, 0, 20], [0, 90, 11], [0, 0, 1]])
    extrinsic = np.array([[0.0, -1, 0, 0.5], [0, 0, -1, 0.2], [1, 0, 0, 3.0], [0, 0, 0, 1]])
    ours = raypick.RaycastingScene.create_rays_pinhole(intrinsic, extrinsic, 40, 22)
    theirs = o3d.t.geometry.RaycastingScene.create_rays_pinhole(
        o3d.core.Tensor(intrinsic), o3d.core.Tensor(extrinsic), 40, 22).numpy()
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_threads_give_the_same_answers():
    v, t = icosphere(3)
    rays = rays_for(v, 20000, 7)
    one = scene_of(v, t, nthreads=1).cast_rays(rays)
    all_cores = scene_of(v, t, nthreads=0).cast_rays(rays)
    for key in one:
        assert bits(one[key]) == bits(all_cores[key]), key


def test_queries_release_the_gil():
    v, t = icosphere(5)
    scene = scene_of(v, t)
    rays = rays_for(v, 3_000_000, 8)
    scene.cast_rays(rays[:10])  # build the tree first
    window = {}

    def trace():
        window["start"] = time.perf_counter()
        scene.cast_rays(rays)
        window["end"] = time.perf_counter()

    worker = threading.Thread(target=trace)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    span = window["end"] - window["start"]
    assert span > 0.05, "the trace is too short to tell"
    inside = [x for x in ticks if window["start"] + 0.2 * span < x < window["end"] - 0.2 * span]
    # With the GIL held for the whole call, this thread could not run in the middle of it.
    assert len(inside) > 100


def test_gpu_gives_the_cpu_answers_bit_for_bit(gpu_backend):
    v, t = icosphere(3)
    v2, t2 = grid_cube(4)
    cpu = raypick.RaycastingScene(backend="cpu")
    gpu = raypick.RaycastingScene(backend=gpu_backend)
    assert gpu.backend == "gpu"
    for scene in (cpu, gpu):
        scene.add_triangles(v, t)
        scene.add_triangles(v2 * np.float32(0.5), t2)
    rays = np.concatenate([rays_for(v, 20000, 9), rays_for(v2, 5000, 10)])
    a, b = cpu.cast_rays(rays), gpu.cast_rays(rays)
    for key in a:
        assert bits(a[key]) == bits(b[key]), key
    assert bits(cpu.test_occlusions(rays)) == bits(gpu.test_occlusions(rays))
    la, lb = cpu.list_intersections(rays[:5000]), gpu.list_intersections(rays[:5000])
    for key in la:
        assert bits(la[key]) == bits(lb[key]), key
    points = rays[:3000, :3] * 0.3
    assert bits(cpu.compute_occupancy(points)) == bits(gpu.compute_occupancy(points))
    assert bits(cpu.compute_signed_distance(points)) == bits(gpu.compute_signed_distance(points))


def test_auto_takes_a_hardware_gpu_and_never_a_software_one(gpu_backend):
    gpu = raypick.RaycastingScene(backend=gpu_backend)
    auto = raypick.RaycastingScene(backend="auto")
    if gpu.device.endswith(", Cpu)"):
        # A software adapter (lavapipe, llvmpipe): the CPU backend is faster.
        assert auto.backend == "cpu"
        assert "only software GPU adapters" in auto.fallback_reason
    else:
        assert auto.backend == "gpu"
        assert auto.device == gpu.device
        assert auto.fallback_reason is None
