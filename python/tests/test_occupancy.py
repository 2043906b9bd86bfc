"""Inside/outside and signed-distance signs on closed meshes, against an independent
ground truth (the generalised winding number, summed in float64), on random points and
on points lined up with vertices and edges: along the axes, and along the parity ray
of each library (Open3D's first vote direction, trimesh's default direction, raypick's
first direction), where that library's ray passes exactly (float32-exact points) or
within rounding through a vertex. raypick must get every point right; the errors of
Open3D and trimesh are counted and reported, not asserted."""

from __future__ import annotations

import numpy as np
import pytest

import raypick
from conftest import closed_meshes, grid_cube, have, report, scene_of

MESHES = closed_meshes()
AXES = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]], np.float64)


def winding_numbers(vertices, triangles, points, chunk=256):
    """The generalised winding number of each point (van Oosterom and Strackee's
    solid angles, float64): 1 inside a closed outward-oriented mesh, 0 outside."""
    tri = vertices[triangles].astype(np.float64)
    out = np.empty(len(points))
    for start in range(0, len(points), chunk):
        p = points[start:start + chunk, None, None, :].astype(np.float64)
        a, b, c = (tri[None, :, k, :] - p[:, :, 0, :] for k in range(3))
        la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
        num = np.einsum("...i,...i->...", a, np.cross(b, c))
        den = la * lb * lc + np.einsum("...i,...i->...", a, b) * lc \
            + np.einsum("...i,...i->...", b, c) * la + np.einsum("...i,...i->...", c, a) * lb
        out[start:start + chunk] = (2.0 * np.arctan2(num, den)).sum(axis=1) / (4.0 * np.pi)
    return out


def open3d_vote_direction():
    """The direction of Open3D 0.20's first inside/outside vote (its source:
    ``1 + U(-0.001, 0.001)`` per component from ``std::mt19937(42)``, in float32),
    reproduced with numpy's identical Mersenne Twister."""
    raw = np.random.RandomState(42).randint(0, 2**32, size=3, dtype=np.uint64)
    canonical = (raw.astype(np.float32) / np.float32(2.0**32)).astype(np.float32)
    a, b = np.float32(-0.001), np.float32(0.001)
    return (np.float32(1) + ((b - a) * canonical + a)).astype(np.float32)


#: trimesh's default ``contains`` direction (cast both ways).
TRIMESH_DIRECTION = np.array([0.4395064455, 0.617598629942, 0.652231566745])


def point_families(vertices, triangles, seed):
    """Named query point sets (float64 values, traced as float32: the families along
    the libraries' rays keep only the points that are exact in float32, so that they lie
    on the line through the vertex exactly)."""
    rng = np.random.default_rng(seed)
    v = vertices.astype(np.float64)
    lo, hi = v.min(axis=0), v.max(axis=0)
    size = float(np.max(hi - lo))
    picks = rng.choice(len(v), size=min(150, len(v)), replace=False)
    edges = triangles[rng.integers(0, len(triangles), 150)]
    k = rng.integers(0, 3, len(edges))
    mids = (v[edges[np.arange(len(edges)), k]] + v[edges[np.arange(len(edges)), (k + 1) % 3]]) / 2
    # Midpoints exact in float32 (axis-aligned lattice edges) give points exactly lined
    # up along the axes; the others are lined up to within float32 rounding.
    steps = np.array([0.03, 0.11, 0.37]) * size
    # Powers of two: anchor + step * direction is often exact in float32.
    exact_steps = 2.0 ** np.arange(np.floor(np.log2(size)) - 6, np.floor(np.log2(size)) + 1)

    def lined_up(anchors, directions, steps):
        pts = anchors[:, None, None, :] + steps[None, None, :, None] * directions[None, :, None, :]
        return pts.reshape(-1, 3)

    def exactly(points):
        """The points whose float32 value is exact: they lie on the line exactly."""
        return points[(points.astype(np.float32) == points).all(axis=1)]

    def both_ways(d):
        d = np.asarray(d, dtype=np.float64)
        return np.array([d, -d])

    return {
        "random": (lo - 0.25 * (hi - lo) + rng.random((3000, 3)) * 1.5 * (hi - lo)),
        "vertex, along axes": lined_up(v[picks], AXES, steps),
        "edge midpoint, along axes": lined_up(mids, AXES, steps),
        "vertex, along Open3D's vote ray": exactly(
            lined_up(v[picks], both_ways(open3d_vote_direction()), exact_steps)),
        "vertex, along trimesh's ray": lined_up(v[picks], both_ways(TRIMESH_DIRECTION), steps),
        "vertex, along raypick's first ray": exactly(
            lined_up(v[picks], both_ways(raypick.PARITY_DIRECTIONS[0]), exact_steps)),
    }


def classify_truth(vertices, triangles, points, scene):
    """Ground truth (True inside) and which points have a trustworthy one: a winding
    number within 1e-4 of 0 or 1 and a distance to the surface above 1e-6 of the
    mesh's size (points on the surface are left out)."""
    w = winding_numbers(vertices, triangles, points)
    size = float(np.max(vertices.max(axis=0) - vertices.min(axis=0)))
    clear = (np.abs(w - np.round(w)) < 1e-4) & np.isin(np.round(w), (0, 1))
    clear &= scene.compute_distance(points.astype(np.float64)) > 1e-6 * size
    return np.round(w) == 1, clear


@pytest.mark.parametrize("name", list(MESHES))
def test_inside_outside_and_signs(name):
    vertices, triangles = MESHES[name]
    scene = scene_of(vertices, triangles)
    o3d_scene = None
    if have("open3d"):
        import open3d as o3d

        o3d_scene = o3d.t.geometry.RaycastingScene()
        o3d_scene.add_triangles(o3d.core.Tensor(vertices),
                                o3d.core.Tensor(triangles.astype(np.uint32)))
    tm = None
    if have("trimesh") and have("embreex"):
        import trimesh

        tm = trimesh.Trimesh(vertices, triangles, process=False)

    retried = 0
    families = point_families(vertices, triangles, 31)
    exact_first = families["vertex, along raypick's first ray"]
    for family, points in families.items():
        points = points.astype(np.float32)
        truth, clear = classify_truth(vertices, triangles, points, scene)
        points, truth = points[clear], truth[clear]
        occupancy, rays_used = scene._occupancy(points, 1)
        signed = scene.compute_signed_distance(points)
        wrong = int(((occupancy == 1) != truth).sum())
        wrong_sign = int(((signed < 0) != truth).sum())
        retried += int((rays_used > 1).sum())
        line = (f"inside/outside {name:22s} {family:34s} {len(points):5d} points "
                f"({int(truth.sum())} inside): raypick wrong {wrong}, sign wrong {wrong_sign}; ")
        if o3d_scene is not None:
            import open3d as o3d

            t = o3d.core.Tensor(points)
            o3d_wrong = int(((o3d_scene.compute_occupancy(t).numpy() == 1) != truth).sum())
            o3d_sign = int(((o3d_scene.compute_signed_distance(t).numpy() < 0) != truth).sum())
            line += f"Open3D wrong {o3d_wrong}, sign wrong {o3d_sign}; "
        else:
            line += "Open3D not installed; "
        if tm is not None:
            tm_wrong = int((tm.contains(points) != truth).sum())
            line += f"trimesh.contains wrong {tm_wrong}"
        else:
            line += "trimesh/embreex not installed"
        report(line)
        assert wrong == 0, f"{name}, {family}: {wrong} points classified wrong"
        assert wrong_sign == 0, f"{name}, {family}: {wrong_sign} signed distances of the wrong sign"
    # Points exactly on raypick's first ray through a vertex make it trace again.
    if len(exact_first):
        assert retried > 0


def test_nsamples_votes_agree_on_closed_meshes():
    vertices, triangles = MESHES["torus"]
    scene = scene_of(vertices, triangles)
    points = point_families(vertices, triangles, 32)["vertex, along axes"].astype(np.float32)
    one = scene.compute_occupancy(points)
    np.testing.assert_array_equal(scene.compute_occupancy(points, nsamples=5), one)
    np.testing.assert_array_equal(scene.compute_occupancy(points.astype(np.float64)), one)


def test_points_on_the_surface_are_inside():
    vertices, triangles = MESHES["grid cube 8x8"]
    scene = scene_of(vertices, triangles)
    on = vertices[:50].astype(np.float32)  # vertices of the cube's surface
    assert (scene.compute_occupancy(on) == 1).all()
    assert (scene.compute_distance(on) == 0).all()


def test_a_ray_through_a_vertex_is_traced_again():
    """Points whose first parity ray passes exactly through a corner of a box: in the
    ray's sheared frame the corner lands exactly on the ray (every edge function
    through it is exactly zero), the hits there show a zero barycentric weight, and a
    second direction decides."""
    d0 = raypick.PARITY_DIRECTIONS[0].astype(np.float64)
    corner = 4.0 * d0  # exact in float32
    cube, triangles = grid_cube(2)
    # The box of side 2 with `corner` as the corner d0 points at.
    vertices = (corner + np.sign(d0) * (cube.astype(np.float64) - 1.0)).astype(np.float32)
    assert (vertices.astype(np.float64) == corner).all(axis=1).any()
    scene = scene_of(vertices, triangles)
    # corner - p is a power-of-two multiple of d0, exactly: 2 d0 is inside the box,
    # 0 and -4 d0 outside, before it.
    points = np.array([2.0, 0.0, -4.0])[:, None] * d0
    assert (points.astype(np.float32) == points).all()
    inside, rays = scene._occupancy(points.astype(np.float32), 1)
    assert inside.tolist() == [1.0, 0.0, 0.0]
    assert rays.tolist() == [2, 2, 2]
