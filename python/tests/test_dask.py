"""Tracing dask arrays on a local cluster of two worker processes over loopback: the
answers equal a single process's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import raypick
from conftest import icosphere, rays_for, torus

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import raypick.dask as rdask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="module")
def scene():
    scene = raypick.RaycastingScene(backend="cpu", nthreads=1)
    v, t = torus(1.0, 0.3, 64, 32)
    scene.add_triangles(v, t)
    v2, t2 = icosphere(3, 0.5, (0.0, 0.0, 0.5))
    scene.add_triangles(v2.astype(np.float64), t2)  # float64: the scene keeps it exact
    return scene


def same_bits(a, b):
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def test_cast_rays_on_two_workers_equals_one_process(client, scene):
    assert len(client.scheduler_info()["workers"]) == 2
    rays = rays_for(scene._state()["meshes"][0][0], 200_000, 41).reshape(400, 500, 6)
    shipped = rdask.scatter(scene, client)
    hits = rdask.cast_rays(shipped, da.from_array(rays, chunks=(50, 500, 6)))
    got = dict(zip(hits, dask.compute(*hits.values())))
    want = scene.cast_rays(rays)
    assert set(got) == set(want)
    for key in want:
        assert got[key].shape == want[key].shape and got[key].dtype == want[key].dtype, key
        assert same_bits(got[key], want[key]), key
    # Both workers traced blocks.
    persisted = hits["t_hit"].persist()
    distributed.wait(persisted)
    holders = {w for ws in client.who_has(persisted).values() for w in ws}
    assert len(holders) == 2
    # The other per-ray and per-point queries, on the same shipped scene.
    flat = da.from_array(rays.reshape(-1, 6), chunks=(25_000, 6))
    assert same_bits(rdask.test_occlusions(shipped, flat).compute(),
                     scene.test_occlusions(rays.reshape(-1, 6)))
    assert same_bits(rdask.count_intersections(shipped, flat[:40_000]).compute(),
                     scene.count_intersections(rays.reshape(-1, 6)[:40_000]))
    points = rays.reshape(-1, 6)[:20_000, :3] * np.float32(0.5)
    dpoints = da.from_array(points, chunks=(5_000, 3))
    assert same_bits(rdask.compute_signed_distance(shipped, dpoints).compute(),
                     scene.compute_signed_distance(points))
    assert same_bits(rdask.compute_occupancy(shipped, dpoints).compute(),
                     scene.compute_occupancy(points))
    shipped.release()


def test_float64_rays_and_bad_input(client, scene):
    rays = rays_for(scene._state()["meshes"][0][0], 20_000, 42).astype(np.float64)
    rays[:, :3] += 0.125
    got = rdask.cast_rays(scene, da.from_array(rays, chunks=(3_000, 6)), client=client)
    assert same_bits(got["t_hit"].compute(), scene.cast_rays(rays)["t_hit"])
    with pytest.raises(ValueError, match="dask array"):
        rdask.cast_rays(scene, rays, client=client)
    with pytest.raises(ValueError, match=r"\(..., 6 or 8\)"):
        rdask.cast_rays(scene, da.zeros((10, 5), chunks=5), client=client)
    # A bad value is found on a worker and raised here.
    bad = rays.copy()
    bad[12_345, 0] = np.nan
    with pytest.raises(ValueError, match=r"rays\[\d+\] has a NaN"):
        rdask.cast_rays(scene, da.from_array(bad, chunks=(3_000, 6)), client=client)["t_hit"].compute()
