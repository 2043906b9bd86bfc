"""raypick: ray-triangle picking on any wgpu GPU or the CPU, with the same answers.

The scene API follows Open3D's ``open3d.t.geometry.RaycastingScene`` (same method
names, array shapes, dtypes and result keys), on numpy arrays::

    import numpy as np
    import raypick

    scene = raypick.RaycastingScene(backend="cpu")
    scene.add_triangles(vertices, triangles)          # (V, 3) float, (T, 3) int
    rays = raypick.RaycastingScene.create_rays_pinhole(
        fov_deg=60, center=[0, 0, 0], eye=[0, 0, 5], up=[0, 1, 0],
        width_px=640, height_px=480)
    hits = scene.cast_rays(rays)                       # dict of (480, 640, ...) arrays
    inside = scene.compute_occupancy(points)           # exact inside/outside

Hits are decided by raypick's watertight ray-triangle test: a ray through a shared
edge or vertex never slips between triangles, and the CPU and GPU backends give the
same answers bit for bit. See ``RaycastingScene`` for what each query returns.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _raypick

__all__ = ["RaycastingScene", "INVALID_ID", "PARITY_DIRECTIONS", "__version__"]

__version__: str = _raypick.__version__

#: The id of "no geometry" / "no triangle" in results (``2**32 - 1``, as in Open3D).
INVALID_ID: int = _raypick.INVALID_ID

#: The 16 unit directions (float32) that ``compute_occupancy`` casts its parity
#: rays along, in the order it tries them.
PARITY_DIRECTIONS: np.ndarray = _raypick.parity_directions().reshape(16, 3)
PARITY_DIRECTIONS.setflags(write=False)

_BACKENDS = ("auto", "cpu", "gpu")


def _native(a: np.ndarray) -> np.ndarray:
    """``a`` in native byte order (a copy only when it is not)."""
    if a.dtype.byteorder not in ("=", "|"):
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _aligned(a: np.ndarray, dtype: Any = None) -> np.ndarray:
    """``a`` C-contiguous and aligned (a copy only when it is not)."""
    return np.require(a, dtype=dtype, requirements=["C", "A"])


def _floats(a: Any, name: str, last: Sequence[int]) -> Tuple[np.ndarray, Tuple[int, ...]]:
    """``a`` as a C-contiguous float32/float64 array of shape ``(n, c)``, ``c`` in
    ``last``, and the leading shape its results take."""
    arr = np.asarray(a)
    if arr.dtype.kind != "f" or arr.dtype.itemsize not in (4, 8):
        raise ValueError(f"{name} must be float32 or float64, got dtype {arr.dtype}")
    if arr.ndim < 1 or arr.shape[-1] not in last:
        want = " or ".join(str(c) for c in last)
        raise ValueError(f"{name} must have shape (..., {want}), got {arr.shape}")
    lead = arr.shape[:-1]
    return _aligned(_native(arr).reshape(-1, arr.shape[-1])), lead


def _rays(rays: Any) -> Tuple[np.ndarray, Tuple[int, ...]]:
    return _floats(rays, "rays", (6, 8))


def _points(points: Any) -> Tuple[np.ndarray, Tuple[int, ...]]:
    return _floats(points, "query_points", (3,))


def _transform(transform: Any) -> np.ndarray:
    m = np.asarray(transform)
    if m.shape != (4, 4):
        raise ValueError(f"transform must have shape (4, 4), got {m.shape}")
    if m.dtype.kind not in "fiu":
        raise ValueError(f"transform must be a numeric array, got dtype {m.dtype}")
    m = _aligned(m, np.float64)
    if not np.isfinite(m).all():
        raise ValueError("transform has a NaN or infinite entry")
    return m


def _mesh_arrays(vertices: Any, triangles: Any) -> Tuple[np.ndarray, np.ndarray]:
    """Checked vertex and triangle arrays (float32/float64 ``(V, 3)``, uint32 ``(T, 3)``)."""
    if triangles is None:
        # A mesh object: trimesh (vertices, faces) or Open3D's legacy TriangleMesh
        # (vertices, triangles).
        mesh = vertices
        faces = getattr(mesh, "faces", None)
        if faces is None:
            faces = getattr(mesh, "triangles", None)
        if faces is None or not hasattr(mesh, "vertices"):
            raise ValueError(
                "add_triangles takes (vertices, triangles) arrays, or a mesh object "
                "with .vertices and .faces (trimesh) or .triangles (Open3D)")
        vertices, triangles = np.asarray(mesh.vertices), np.asarray(faces)
    v = np.asarray(vertices)
    if v.dtype.kind != "f" or v.dtype.itemsize not in (4, 8):
        raise ValueError(f"vertices must be float32 or float64, got dtype {v.dtype}")
    if v.ndim != 2 or v.shape[1] != 3:
        raise ValueError(f"vertices must have shape (V, 3), got {v.shape}")
    if v.shape[0] == 0:
        raise ValueError("vertices is empty")
    t = np.asarray(triangles)
    if t.dtype.kind not in "iu":
        raise ValueError(f"triangles must be an integer array, got dtype {t.dtype}")
    if t.ndim != 2 or t.shape[1] != 3:
        raise ValueError(f"triangles must have shape (T, 3), got {t.shape}")
    if t.shape[0] == 0:
        raise ValueError("triangles is empty")
    low, high = t.min(), t.max()
    if low < 0 or high >= v.shape[0]:
        bad = int(np.flatnonzero(((t < 0) | (t >= v.shape[0])).any(axis=1))[0])
        raise ValueError(
            f"triangles[{bad}] = {t[bad].tolist()} names a vertex outside "
            f"0..{v.shape[0] - 1}")
    finite = np.isfinite(v).all(axis=1)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"vertices[{bad}] has a NaN or infinite coordinate")
    v = _aligned(_native(v))
    t = _aligned(t, np.uint32)
    return v, t


class RaycastingScene:
    """A scene of triangle meshes for ray casting and point queries.

    Modelled on Open3D's ``open3d.t.geometry.RaycastingScene``: the same method
    names, argument and result shapes, dtypes and dictionary keys, on numpy arrays.

    Args:
        backend: ``"cpu"``; ``"gpu"`` (the best wgpu adapter: Vulkan, Metal, DX12,
            a software one such as Mesa's lavapipe included; an error when none
            opens); or ``"auto"``, a hardware GPU when one opens, else the CPU, which
            also takes over when the GPU is lost or out of memory. ``"auto"`` never
            takes a software adapter: on the same cores ``"cpu"`` is faster. Both
            give the same hits bit for bit.
        nthreads: CPU threads (0: every core).
        verbose: warn (``warnings.warn``) when ``"auto"`` falls back to the CPU.
            raypick writes nothing to stdout or stderr otherwise.

    Precision: float32 arrays are traced as given. Vertices given in float64 are
    kept exact: the scene is stored relative to a local origin chosen in float64 and
    float64 rays and points are moved into that frame in float64 (rays far from the
    origin lose nothing). ``t_hit`` is float32, in units of the ray direction's
    length.

    Ties: a ray meeting several triangles at the same ``t`` reports the lowest
    geometry id, then the lowest triangle id.

    Differences from Open3D: the thread count is the scene's (``nthreads`` here), not a
    per-call argument; ``compute_occupancy`` does not flip on points lined up with
    vertices and edges (see there); closest points are computed in float64.
    Queries release the GIL, so several Python threads can query one scene at once.
    """

    #: The id of "no geometry" / "no triangle" (``2**32 - 1``).
    INVALID_ID: int = INVALID_ID

    def __init__(self, backend: str = "auto", nthreads: int = 0, verbose: bool = False):
        if backend not in _BACKENDS:
            raise ValueError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        if isinstance(nthreads, bool) or not isinstance(nthreads, (int, np.integer)) \
                or nthreads < 0:
            raise ValueError(f"nthreads must be a non-negative integer, got {nthreads!r}")
        self._requested = backend
        self._nthreads = int(nthreads)
        self._native = _raypick.Scene(backend, int(nthreads))
        if verbose and self._native.fallback_reason is not None:
            import warnings

            warnings.warn(f"raypick: tracing on the CPU: {self._native.fallback_reason}")

    # -- the scene ---------------------------------------------------------------

    @property
    def backend(self) -> str:
        """What traces: ``"cpu"`` or ``"gpu"``."""
        return self._native.backend

    @property
    def device(self) -> str:
        """The device that traces: the GPU adapter, or the CPU and its threads."""
        return self._native.device

    @property
    def fallback_reason(self) -> Optional[str]:
        """Why ``backend="auto"`` traces on the CPU, or ``None``."""
        return self._native.fallback_reason

    def __len__(self) -> int:
        """Number of geometries."""
        return len(self._native)

    def add_triangles(self, vertices: Any, triangles: Any = None) -> int:
        """Adds a triangle mesh and returns its geometry id (0, 1, 2, ...).

        Args:
            vertices: ``(V, 3)`` float32 or float64 positions (float64 is kept exact),
                or a mesh object (trimesh's ``Trimesh``, Open3D's legacy
                ``TriangleMesh``) with ``triangles`` left out.
            triangles: ``(T, 3)`` integer vertex indices.

        Raises:
            ValueError: wrong shapes or dtypes, an empty mesh, an index outside
                ``0..V-1``, a NaN or infinite vertex.
        """
        v, t = _mesh_arrays(vertices, triangles)
        return self._native.add_mesh(v, t)

    def add_instance(self, geometry_id: int, transform: Any) -> int:
        """Places geometry ``geometry_id``'s mesh once more, by a 4x4 affine
        transform (object to world, row-major, ``p_world = transform @ [p, 1]``),
        and returns the new geometry id. The mesh is stored once.

        A scene with instances (or moved by ``set_transform``) is traced as an
        instance scene, in float32: only ``cast_rays`` and ``test_occlusions`` are
        available on it (the others raise ``NotImplementedError``).

        Raises:
            ValueError: an unknown geometry, or a transform that is not finite,
                affine (last row ``0 0 0 1``) and invertible.
        """
        return self._native.add_instance(int(geometry_id), _transform(transform))

    def set_transform(self, geometry_id: int, transform: Any) -> None:
        """Places geometry ``geometry_id`` by a 4x4 affine transform (see
        ``add_instance``). On a scene already traced with instances this refits the
        top-level tree only."""
        self._native.set_transform(int(geometry_id), _transform(transform))

    # -- rays ----------------------------------------------------------------------

    def cast_rays(self, rays: Any) -> Dict[str, np.ndarray]:
        """The closest hit of every ray.

        Args:
            rays: ``(..., 6)`` float32 or float64, ``[ox, oy, oz, dx, dy, dz]``
                (``t`` in ``[0, inf]``), or ``(..., 8)`` in raypick's layout
                ``[ox, oy, oz, tmin, dx, dy, dz, tmax]`` (read in place when float32
                and C-contiguous). The direction need not be unit length; a zero
                direction misses.

        Returns:
            ``t_hit`` (``...``, float32, ``inf`` on a miss; hit point =
            ``origin + t_hit * direction``), ``geometry_ids`` and ``primitive_ids``
            (``...``, uint32, ``INVALID_ID`` on a miss), ``primitive_uvs``
            (``(..., 2)`` float32: the barycentric weights ``u, v`` of the triangle's
            second and third vertex), ``primitive_normals`` (``(..., 3)`` float32, the
            unit normal ``cross(v1 - v0, v2 - v0)``, zero on a miss).

        Raises:
            ValueError: wrong shape or dtype, a NaN or infinite origin or direction.
        """
        arr, lead = _rays(rays)
        t, geometry, primitive, uv, normal = self._native.cast_rays(arr)
        return {
            "t_hit": t.reshape(lead),
            "geometry_ids": geometry.reshape(lead),
            "primitive_ids": primitive.reshape(lead),
            "primitive_uvs": uv.reshape(lead + (2,)),
            "primitive_normals": normal.reshape(lead + (3,)),
        }

    def test_occlusions(self, rays: Any, tnear: float = 0.0, tfar: float = np.inf) -> np.ndarray:
        """Whether each ray hits anything with ``tnear <= t <= tfar`` (bool, shape
        ``...``): ``cast_rays`` would report a hit there, found faster (each ray stops
        at its first hit). Rays as in ``cast_rays``."""
        arr, lead = _rays(rays)
        return self._native.test_occlusions(arr, float(tnear), float(tfar)).reshape(lead)

    def count_intersections(self, rays: Any) -> np.ndarray:
        """The number of triangles each ray hits with ``t >= 0`` (int32, shape
        ``...``). Every triangle counts once: a ray through an edge shared by two
        triangles counts both (use ``compute_occupancy`` for inside/outside)."""
        arr, lead = _rays(rays)
        return self._native.count_intersections(arr).reshape(lead)

    def list_intersections(self, rays: Any) -> Dict[str, np.ndarray]:
        """Every hit of every ray, nearest first (ties on ``t`` by geometry, then
        triangle id).

        Returns:
            ``ray_splits`` (``(N + 1,)`` uint32: ray ``i``'s hits are
            ``ray_splits[i]:ray_splits[i + 1]``, rays in C order of ``...``),
            ``ray_ids``, ``geometry_ids``, ``primitive_ids`` (``(M,)`` uint32),
            ``primitive_uvs`` (``(M, 2)`` float32), ``t_hit`` (``(M,)`` float32).
        """
        arr, _ = _rays(rays)
        splits, ray, geometry, primitive, uv, t = self._native.list_intersections(arr)
        return {
            "ray_splits": splits,
            "ray_ids": ray,
            "geometry_ids": geometry,
            "primitive_ids": primitive,
            "primitive_uvs": uv.reshape(-1, 2),
            "t_hit": t,
        }

    # -- points --------------------------------------------------------------------

    def compute_closest_points(self, query_points: Any) -> Dict[str, np.ndarray]:
        """The closest point of the surface to each query point (computed in
        float64 on a tree over the triangles; ties go to the lowest geometry, then
        triangle id; triangles without area are left out).

        Args:
            query_points: ``(..., 3)`` float32 or float64.

        Returns:
            ``points`` (``(..., 3)``, the query points' dtype), ``geometry_ids``,
            ``primitive_ids`` (uint32), ``primitive_uvs`` (``(..., 2)`` float32: the
            point is ``(1-u-v)*v0 + u*v1 + v*v2``), ``primitive_normals``
            (``(..., 3)`` float32).
        """
        arr, lead = _points(query_points)
        point, _, geometry, primitive, uv, normal = self._native.closest_points(arr)
        return {
            "points": point.reshape(lead + (3,)).astype(arr.dtype, copy=False),
            "geometry_ids": geometry.reshape(lead),
            "primitive_ids": primitive.reshape(lead),
            "primitive_uvs": uv.reshape(lead + (2,)),
            "primitive_normals": normal.reshape(lead + (3,)),
        }

    def compute_distance(self, query_points: Any) -> np.ndarray:
        """The distance from each query point to the surface (shape ``...``, the
        query points' dtype; computed in float64)."""
        arr, lead = _points(query_points)
        _, distance, _, _, _, _ = self._native.closest_points(arr)
        return distance.reshape(lead).astype(arr.dtype, copy=False)

    def compute_occupancy(self, query_points: Any, nsamples: int = 1) -> np.ndarray:
        """1.0 for points inside the closed meshes, 0.0 outside (float32, shape
        ``...``).

        Inside means an odd number of crossings of the surface along a ray from the
        point, each crossing decided by raypick's watertight test. A ray that meets
        an edge or a vertex (seen from the hits it reports: a barycentric weight of
        exactly zero) is not counted, and the point is traced again along the next
        of 16 fixed directions (``PARITY_DIRECTIONS``); so points lined up with
        vertices and edges are classified like any other. ``nsamples`` (odd, at
        most 15) is the number of such clean rays whose majority decides (1: the
        first). A point on the surface (a hit at ``t == 0``) is inside.

        Meaningful for closed meshes only (every edge shared by two triangles).
        """
        inside, _ = self._occupancy(query_points, nsamples)
        return inside

    def compute_signed_distance(self, query_points: Any, nsamples: int = 1) -> np.ndarray:
        """``compute_distance``, negative inside (``compute_occupancy`` decides the
        sign; the query points' dtype)."""
        arr, lead = _points(query_points)
        inside, _ = self._native.occupancy(arr, _nsamples(nsamples))
        _, distance, _, _, _, _ = self._native.closest_points(arr)
        signed = np.where(inside, -distance, distance)
        return signed.reshape(lead).astype(arr.dtype, copy=False)

    def _occupancy(self, query_points: Any, nsamples: int) -> Tuple[np.ndarray, np.ndarray]:
        """Occupancy and the number of rays each point needed (tests read it)."""
        arr, lead = _points(query_points)
        inside, rays = self._native.occupancy(arr, _nsamples(nsamples))
        return inside.astype(np.float32).reshape(lead), rays.reshape(lead)

    # -- cameras -------------------------------------------------------------------

    @staticmethod
    def create_rays_pinhole(*args: Any, dtype: Any = np.float32, **kwargs: Any) -> np.ndarray:
        """Rays of a pinhole camera, ``(height_px, width_px, 6)``, as Open3D makes them.

        Two forms::

            create_rays_pinhole(intrinsic_matrix, extrinsic_matrix, width_px, height_px)
            create_rays_pinhole(fov_deg, center, eye, up, width_px, height_px)

        ``intrinsic_matrix`` is the 3x3 ``K``, ``extrinsic_matrix`` the 4x4
        world-to-camera transform. Ray ``[y, x]`` starts at the camera centre and
        points through pixel centre ``(x + 0.5, y + 0.5)``:
        ``R^T K^-1 [x + 0.5, y + 0.5, 1]`` (not normalised: its camera-space ``z`` is
        1, so ``t_hit`` is the depth). ``fov_deg`` is the horizontal field of view;
        the camera looks from ``eye`` at ``center`` with ``up`` pointing up.
        Computed in float64, returned as ``dtype`` (float32 or float64).
        """
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        fov_form = "fov_deg" in kwargs or (args and np.ndim(args[0]) == 0)
        if fov_form:
            names = ("fov_deg", "center", "eye", "up", "width_px", "height_px")
        else:
            names = ("intrinsic_matrix", "extrinsic_matrix", "width_px", "height_px")
        values = _bind(names, args, kwargs)
        width, height = _size(values["width_px"], "width_px"), _size(values["height_px"], "height_px")
        if fov_form:
            intrinsic, extrinsic = _look_at(values, width, height)
        else:
            intrinsic = _matrix(values["intrinsic_matrix"], (3, 3), "intrinsic_matrix")
            extrinsic = _matrix(values["extrinsic_matrix"], (4, 4), "extrinsic_matrix")
        rotation = extrinsic[:3, :3]
        try:
            camera_to_pixels = np.linalg.inv(intrinsic)
        except np.linalg.LinAlgError:
            raise ValueError("intrinsic_matrix is singular") from None
        centre = -rotation.T @ extrinsic[:3, 3]
        to_world = rotation.T @ camera_to_pixels
        xs, ys = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
        pixels = np.stack([xs, ys, np.ones_like(xs)], axis=-1)
        rays = np.empty((height, width, 6), dtype=np.float64)
        rays[..., :3] = centre
        rays[..., 3:] = pixels @ to_world.T
        if not np.isfinite(rays).all():
            raise ValueError("the camera gives non-finite rays")
        return rays.astype(dtype)

    # -- pickling (Dask ships scenes this way) -------------------------------------

    def __reduce__(self):
        return (_rebuild, (self._state(),))

    def _state(self) -> Dict[str, Any]:
        """The scene as plain data: backend, threads, meshes and placements."""
        meshes, geometries = self._native.export()
        return {
            "backend": self._requested,
            "nthreads": self._nthreads,
            "meshes": [(v.reshape(-1, 3), t.reshape(-1, 3)) for v, t in meshes],
            "geometries": [(m, None if tr is None else tr.reshape(4, 4)) for m, tr in geometries],
        }


def _rebuild(state: Dict[str, Any], backend: Optional[str] = None,
             nthreads: Optional[int] = None) -> RaycastingScene:
    """A scene from ``RaycastingScene._state()`` (optionally on another backend or
    thread count): the same meshes and placements, the same geometry ids."""
    scene = RaycastingScene(backend or state["backend"],
                            state["nthreads"] if nthreads is None else nthreads)
    first_of = {}
    for gid, (mesh, transform) in enumerate(state["geometries"]):
        if transform is not None:
            transform = _aligned(transform, np.float64)
        if mesh in first_of:
            new = scene._native.add_instance(first_of[mesh], transform)
        else:
            vertices, triangles = state["meshes"][mesh]
            new = scene._native.add_mesh(_aligned(vertices), _aligned(triangles, np.uint32))
            first_of[mesh] = new
            if transform is not None:
                scene._native.set_transform(new, transform)
        assert new == gid, "geometry ids follow the order of the placements"
    return scene


def _nsamples(nsamples: Any) -> int:
    if isinstance(nsamples, bool) or not isinstance(nsamples, (int, np.integer)) \
            or nsamples < 1 or nsamples % 2 == 0 or nsamples > 15:
        raise ValueError(f"nsamples must be an odd integer from 1 to 15, got {nsamples!r}")
    return int(nsamples)


def _bind(names: Sequence[str], args: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    if len(args) > len(names):
        raise ValueError(f"create_rays_pinhole takes {len(names)} arguments: {', '.join(names)}")
    values = dict(zip(names, args))
    for key, value in kwargs.items():
        if key not in names or key in values:
            raise ValueError(f"create_rays_pinhole: unexpected or repeated argument {key!r}")
        values[key] = value
    missing = [n for n in names if n not in values]
    if missing:
        raise ValueError(f"create_rays_pinhole: missing {', '.join(missing)}")
    return values


def _size(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _matrix(value: Any, shape: Tuple[int, int], name: str) -> np.ndarray:
    m = np.asarray(value, dtype=np.float64)
    if m.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name} has a NaN or infinite entry")
    return m


def _look_at(values: Dict[str, Any], width: int, height: int) -> Tuple[np.ndarray, np.ndarray]:
    """Open3D's intrinsic and extrinsic matrices of a look-at camera."""
    fov = float(values["fov_deg"])
    if not 0.0 < fov < 180.0:
        raise ValueError(f"fov_deg must be in (0, 180), got {fov}")
    vec = {}
    for name in ("center", "eye", "up"):
        v = np.asarray(values[name], dtype=np.float64)
        if v.shape != (3,) or not np.isfinite(v).all():
            raise ValueError(f"{name} must be 3 finite numbers, got {values[name]!r}")
        vec[name] = v
    focal = 0.5 * width / np.tan(0.5 * np.deg2rad(fov))
    intrinsic = np.array([[focal, 0.0, 0.5 * width], [0.0, focal, 0.5 * height], [0.0, 0.0, 1.0]])
    forward = vec["center"] - vec["eye"]
    up = vec["up"]
    if np.linalg.norm(forward) == 0.0 or np.linalg.norm(up) == 0.0:
        raise ValueError("eye must differ from center, and up must not be zero")
    forward = forward / np.linalg.norm(forward)
    right = np.cross(up / np.linalg.norm(up), forward)
    if np.linalg.norm(right) < 1e-12:
        raise ValueError("up must not be parallel to the viewing direction")
    right /= np.linalg.norm(right)
    rotation = np.stack([right, np.cross(forward, right), forward])
    extrinsic = np.eye(4)
    extrinsic[:3, :3] = rotation
    extrinsic[:3, 3] = -rotation @ vec["eye"]
    return intrinsic, extrinsic
