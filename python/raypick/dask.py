"""Tracing dask arrays of rays (or query points) on a Dask cluster.

The scene is shipped to every worker once, as plain numpy arrays
(``client.scatter(..., broadcast=True)``); each worker builds its acceleration
structure on the first block it traces and keeps it for the following blocks and
calls. Blocks of rays are traced where they lie, and the answers are the ones a
single process gives, bit for bit::

    from dask.distributed import Client, LocalCluster
    import dask.array as da
    import raypick, raypick.dask

    client = Client(LocalCluster(n_workers=2))
    scene = raypick.RaycastingScene(backend="cpu", nthreads=1)
    scene.add_triangles(vertices, triangles)
    shipped = raypick.dask.scatter(scene, client)        # once per scene
    rays = da.from_array(rays_np, chunks=(250_000, 6))
    hits = raypick.dask.cast_rays(shipped, rays)          # dict of dask arrays
    t_hit = hits["t_hit"].compute()

Each worker traces with the scene's ``nthreads`` (0: every core of its machine);
with several workers on one machine give each a share (``nthreads=1`` with one
thread per worker, for example). ``backend`` is the scene's too: ``"auto"`` uses
each worker's hardware GPU when it has one.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any, Dict, Optional

import numpy as np

from . import RaycastingScene, _rebuild

__all__ = [
    "ShippedScene",
    "scatter",
    "cast_rays",
    "test_occlusions",
    "count_intersections",
    "compute_distance",
    "compute_signed_distance",
    "compute_occupancy",
]

#: The record ``cast_rays`` traces each block into (one field per result).
CAST_DTYPE = np.dtype([
    ("t_hit", np.float32),
    ("geometry_ids", np.uint32),
    ("primitive_ids", np.uint32),
    ("primitive_uvs", np.float32, (2,)),
    ("primitive_normals", np.float32, (3,)),
])


class _Payload:
    """The scene's data as the workers receive it; builds the scene once per worker
    process (on first use) and keeps it while the payload lives there."""

    def __init__(self, state: Dict[str, Any], token: str):
        self.state = state
        self.token = token
        self._scene: Optional[RaycastingScene] = None
        self._lock = threading.Lock()

    def __getstate__(self) -> Dict[str, Any]:
        return {"state": self.state, "token": self.token}

    def __setstate__(self, data: Dict[str, Any]) -> None:
        self.__init__(data["state"], data["token"])

    def scene(self) -> RaycastingScene:
        with self._lock:
            if self._scene is None:
                self._scene = _rebuild(self.state)
            return self._scene


class ShippedScene:
    """A scene scattered to every worker of a client (see ``scatter``)."""

    def __init__(self, future: Any, client: Any):
        self.future = future
        self.client = client

    def release(self) -> None:
        """Frees the scene on the workers."""
        self.future.release()


def scatter(scene: RaycastingScene, client: Any = None) -> ShippedScene:
    """Ships ``scene`` to every worker of ``client`` (the current client by default)
    once; pass the result to the functions of this module."""
    if client is None:
        from distributed import get_client

        client = get_client()
    payload = _Payload(scene._state(), uuid.uuid4().hex)
    future = client.scatter(payload, broadcast=True, hash=False)
    return ShippedScene(future, client)


def _shipped(scene: Any, client: Any) -> ShippedScene:
    if isinstance(scene, ShippedScene):
        return scene
    if isinstance(scene, RaycastingScene):
        return scatter(scene, client)
    raise ValueError(f"expected a RaycastingScene or a ShippedScene, got {type(scene).__name__}")


def _blocks(arr: Any, last: tuple, name: str):
    import dask.array as da

    if not isinstance(arr, da.Array):
        raise ValueError(f"{name} must be a dask array, got {type(arr).__name__}")
    if arr.ndim < 1 or arr.shape[-1] not in last:
        want = " or ".join(str(c) for c in last)
        raise ValueError(f"{name} must have shape (..., {want}), got {arr.shape}")
    if arr.dtype not in (np.float32, np.float64):
        raise ValueError(f"{name} must be float32 or float64, got dtype {arr.dtype}")
    # Every block holds whole rays (points).
    return arr.rechunk({arr.ndim - 1: -1})


def _cast_block(block: np.ndarray, payload: _Payload) -> np.ndarray:
    hits = payload.scene().cast_rays(block)
    out = np.empty(block.shape[:-1], dtype=CAST_DTYPE)
    for field in CAST_DTYPE.names:
        out[field] = hits[field]
    return out


def _method_block(block: np.ndarray, payload: _Payload, method: str, kwargs: Dict[str, Any]):
    return getattr(payload.scene(), method)(block, **kwargs)


def cast_rays(scene: Any, rays: Any, client: Any = None) -> Dict[str, Any]:
    """``RaycastingScene.cast_rays`` of a dask array of rays ``(..., 6)`` (or
    ``(..., 8)``): a dict of dask arrays with the same keys, shapes and dtypes.
    ``scene`` is a ``ShippedScene`` (or a scene, shipped now). All five arrays come
    from one traced record per block: compute them together (``dask.compute(*d.values())``)."""
    shipped = _shipped(scene, client)
    rays = _blocks(rays, (6, 8), "rays")
    records = rays.map_blocks(
        _cast_block, shipped.future, dtype=CAST_DTYPE, drop_axis=rays.ndim - 1,
        meta=np.empty((0,) * (rays.ndim - 1), dtype=CAST_DTYPE))
    return {field: records[field] for field in CAST_DTYPE.names}


def _per_item(scene: Any, arr: Any, client: Any, method: str, last: tuple, name: str,
              dtype: Any, **kwargs: Any):
    shipped = _shipped(scene, client)
    arr = _blocks(arr, last, name)
    return arr.map_blocks(
        _method_block, shipped.future, method, kwargs, dtype=dtype, drop_axis=arr.ndim - 1,
        meta=np.empty((0,) * (arr.ndim - 1), dtype=dtype))


def test_occlusions(scene: Any, rays: Any, tnear: float = 0.0, tfar: float = np.inf,
                    client: Any = None):
    """``RaycastingScene.test_occlusions`` of a dask array of rays (bool)."""
    return _per_item(scene, rays, client, "test_occlusions", (6, 8), "rays", np.bool_,
                     tnear=tnear, tfar=tfar)


def count_intersections(scene: Any, rays: Any, client: Any = None):
    """``RaycastingScene.count_intersections`` of a dask array of rays (int32)."""
    return _per_item(scene, rays, client, "count_intersections", (6, 8), "rays", np.int32)


def compute_distance(scene: Any, query_points: Any, client: Any = None):
    """``RaycastingScene.compute_distance`` of a dask array of points."""
    return _per_item(scene, query_points, client, "compute_distance", (3,), "query_points",
                     query_points.dtype)


def compute_signed_distance(scene: Any, query_points: Any, nsamples: int = 1, client: Any = None):
    """``RaycastingScene.compute_signed_distance`` of a dask array of points."""
    return _per_item(scene, query_points, client, "compute_signed_distance", (3,),
                     "query_points", query_points.dtype, nsamples=nsamples)


def compute_occupancy(scene: Any, query_points: Any, nsamples: int = 1, client: Any = None):
    """``RaycastingScene.compute_occupancy`` of a dask array of points (float32)."""
    return _per_item(scene, query_points, client, "compute_occupancy", (3,), "query_points",
                     np.float32, nsamples=nsamples)
