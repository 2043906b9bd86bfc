"""Measurements (not a test): raypick from Python against Open3D and trimesh+embreex.

    python python/bench/compare.py [--rays 1000000] [--threads 2] [--json out.json]

1. Rays per second of ``cast_rays`` on the same meshes and rays: raypick (CPU, and
   the GPU backend when an adapter opens), Open3D's RaycastingScene, trimesh's embreex
   intersector. Incoherent rays (origins on a sphere around the mesh, aimed into its
   box) and camera rays (a 1024x1024 pinhole camera framing the mesh).
2. The Python layer's cost against the Rust API on the same batch: ``cast_rays`` with
   (N, 6) rays (Open3D's dictionary), the native call with raypick's (N, 8) layout
   (read in place), and ``raypick trace`` (the command line, Rust only) on the same
   mesh and rays.
3. Inside/outside errors of each library on points lined up with vertices and edges
   (the test suite's point sets, against winding numbers).
4. Dask: the same rays traced on a local cluster of 1 and 2 worker processes (one
   thread each) against one process.

Every timing is the best of ``--repeat`` runs after one warm-up run (which builds the
acceleration structures).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "tests"))

import raypick  # noqa: E402
from conftest import MODELS, closed_meshes, icosphere, load_mesh, rays_for  # noqa: E402


def best_of(fn, repeat):
    fn()  # warm-up (and the acceleration structure)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def bumpy_sphere(subdivisions=6, seed=3):
    """An icosphere with its vertices pushed in and out (about 82k or 328k triangles)."""
    v, t = icosphere(subdivisions)
    rng = np.random.default_rng(seed)
    r = 1.0 + 0.05 * np.sin(7 * v[:, 0]) * np.cos(5 * v[:, 1]) + 0.01 * rng.standard_normal(len(v))
    return (v * r[:, None]).astype(np.float32), t


def terrain(n=224, seed=4):
    """A height field of n x n squares (2 n^2 triangles, 100,352 for n = 224)."""
    rng = np.random.default_rng(seed)
    x, y = np.meshgrid(np.linspace(-1, 1, n + 1), np.linspace(-1, 1, n + 1), indexing="ij")
    z = 0.1 * np.sin(4 * x) * np.cos(3 * y) + 0.01 * rng.standard_normal(x.shape)
    v = np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)
    i = np.arange(n)[:, None] * (n + 1) + np.arange(n)[None, :]
    i = i.reshape(-1)
    t = np.concatenate([np.stack([i, i + n + 1, i + n + 2], 1), np.stack([i, i + n + 2, i + 1], 1)])
    return v, t


def camera_rays(vertices, count):
    side = int(round(count ** 0.5))
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    centre = (lo + hi) / 2
    eye = centre + np.linalg.norm(hi - lo) * np.array([0.3, 1.2, 1.0])
    rays = raypick.RaycastingScene.create_rays_pinhole(
        fov_deg=50, center=centre, eye=eye, up=[0, 0, 1], width_px=side, height_px=side)
    return rays.reshape(-1, 6)


def write_obj(path, vertices, triangles):
    with open(path, "w") as f:
        # repr of a Python float reads back exactly (float32 values are exact in float64).
        f.write("".join(f"v {x!r} {y!r} {z!r}\n" for x, y, z in vertices.astype(np.float64).tolist()))
        f.write("".join(f"f {a} {b} {c}\n" for a, b, c in (triangles + 1).tolist()))


def raypick_cli():
    binary = REPO / "target" / "release" / "raypick"
    if binary.exists():
        return [str(binary)]
    return ["cargo", "run", "--quiet", "--release", "-p", "raypick-cli", "--"]


def throughput(meshes, n_rays, threads, repeat, rows):
    import trimesh
    from trimesh.ray.ray_pyembree import RayMeshIntersector

    try:
        import open3d as o3d
    except Exception as e:  # open3d is optional
        o3d = None
        print(f"open3d unavailable ({e}); its rows are left out")
    gpu_ok = True
    for name, (v, t) in meshes.items():
        sets = {"incoherent": rays_for(v, n_rays, 5), "camera": camera_rays(v, n_rays)}
        scene = raypick.RaycastingScene(backend="cpu", nthreads=threads)
        scene.add_triangles(v, t)
        gpu = None
        if gpu_ok:
            try:
                gpu = raypick.RaycastingScene(backend="gpu")
                gpu.add_triangles(v, t)
            except RuntimeError as e:
                gpu_ok = False
                print(f"no GPU backend ({e})")
        if o3d is not None:
            o3 = o3d.t.geometry.RaycastingScene()
            o3.add_triangles(o3d.core.Tensor(v), o3d.core.Tensor(t.astype(np.uint32)))
        tm = RayMeshIntersector(trimesh.Trimesh(v, t, process=False), scale_to_box=False)
        for kind, rays in sets.items():
            n = len(rays)
            runs = {"raypick cpu": lambda: scene.cast_rays(rays)}
            if gpu is not None:
                runs[f"raypick gpu ({gpu.device})"] = lambda: gpu.cast_rays(rays)
            if o3d is not None:
                tensor = o3d.core.Tensor(rays)
                runs["open3d"] = lambda: o3.cast_rays(tensor, nthreads=threads)
            runs["trimesh+embreex"] = lambda: tm.intersects_id(
                rays[:, :3], rays[:, 3:], multiple_hits=False, return_locations=True)
            for library, fn in runs.items():
                seconds = best_of(fn, 1 if "gpu" in library or "trimesh" in library else repeat)
                rows.append({"table": "cast_rays", "mesh": name, "triangles": len(t),
                             "rays": kind, "n": n, "library": library,
                             "seconds": seconds, "mrays_per_s": n / seconds / 1e6})
                print(f"  {name:22s} {len(t):7d} tris  {kind:10s} {library:45s} "
                      f"{n / seconds / 1e6:7.2f} Mrays/s")


def overhead(v, t, n_rays, threads, repeat, rows):
    rays = rays_for(v, n_rays, 6)
    scene = raypick.RaycastingScene(backend="cpu", nthreads=threads)
    scene.add_triangles(v, t)
    rays8 = np.zeros((len(rays), 8), np.float32)
    rays8[:, :3], rays8[:, 4:7], rays8[:, 7] = rays[:, :3], rays[:, 3:], np.inf
    native = scene._native
    results = {
        "python cast_rays, (N, 6) rays, Open3D dict": best_of(lambda: scene.cast_rays(rays), repeat),
        "native call, (N, 8) rays read in place": best_of(lambda: native.cast_rays(rays8), repeat),
        "python test_occlusions, (N, 6) rays": best_of(lambda: scene.test_occlusions(rays), repeat),
    }
    with tempfile.TemporaryDirectory() as tmp:
        mesh, ray_file, out = Path(tmp) / "mesh.obj", Path(tmp) / "rays.npy", Path(tmp) / "hits.npy"
        write_obj(mesh, v, t)
        np.save(ray_file, rays8)
        cmd = raypick_cli() + ["trace", "--mesh", str(mesh), "--rays", str(ray_file),
                               "--out", str(out), "--backend", "cpu", "--threads", str(threads),
                               "--repeat", str(repeat), "--json"]
        report = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        results["rust: raypick trace (trace_ms, best)"] = report["trace_ms"] / 1e3
        # The same hits.
        cli_hits = np.load(out)
        ours = scene.cast_rays(rays)
        same = np.array_equal(cli_hits["t"].view(np.uint32), ours["t_hit"].view(np.uint32))
        print(f"  the command line's hits equal the Python layer's bit for bit: {same}")
    base = results["rust: raypick trace (trace_ms, best)"]
    for what, seconds in results.items():
        rows.append({"table": "overhead", "what": what, "n": len(rays), "seconds": seconds,
                     "mrays_per_s": len(rays) / seconds / 1e6, "over_rust": seconds / base})
        print(f"  {what:48s} {seconds * 1e3:8.1f} ms  {len(rays) / seconds / 1e6:6.2f} Mrays/s  "
              f"x{seconds / base:.2f} of the Rust call")


def inside_outside(rows):
    from test_occupancy import classify_truth, point_families

    try:
        import open3d as o3d
    except Exception:
        o3d = None
    import trimesh

    for name, (v, t) in closed_meshes().items():
        scene = raypick.RaycastingScene(backend="cpu")
        scene.add_triangles(v, t)
        tm = trimesh.Trimesh(v, t, process=False)
        if o3d is not None:
            o3 = o3d.t.geometry.RaycastingScene()
            o3.add_triangles(o3d.core.Tensor(v), o3d.core.Tensor(t.astype(np.uint32)))
        for family, points in point_families(v, t, 31).items():
            if family == "random":
                continue
            points = points.astype(np.float32)
            truth, clear = classify_truth(v, t, points, scene)
            points, truth = points[clear], truth[clear]
            if not len(points):
                continue
            wrong = {"raypick": int(((scene.compute_occupancy(points) == 1) != truth).sum()),
                     "trimesh.contains": int((tm.contains(points) != truth).sum())}
            if o3d is not None:
                occ = o3.compute_occupancy(o3d.core.Tensor(points)).numpy()
                wrong["open3d"] = int(((occ == 1) != truth).sum())
                occ3 = o3.compute_occupancy(o3d.core.Tensor(points), nsamples=3).numpy()
                wrong["open3d nsamples=3"] = int(((occ3 == 1) != truth).sum())
            rows.append({"table": "inside_outside", "mesh": name, "points": family,
                         "n": len(points), "wrong": wrong})
            print(f"  {name:22s} {family:34s} {len(points):5d} points: "
                  + ", ".join(f"{k} {w}" for k, w in wrong.items()))


def dask_throughput(v, t, n_rays, repeat, rows):
    import dask
    import dask.array as da
    import distributed

    import raypick.dask as rdask

    # Rays sent with the graph are what this measures too: no advice needed.
    warnings.filterwarnings("ignore", message="Sending large graph")
    rays = rays_for(v, n_rays, 7)
    for threads in (1, 2):
        scene = raypick.RaycastingScene(backend="cpu", nthreads=threads)
        scene.add_triangles(v, t)
        seconds = best_of(lambda: scene.cast_rays(rays), repeat)
        rows.append({"table": "dask", "setup": f"one process, {threads} thread(s)",
                     "n": len(rays), "seconds": seconds, "mrays_per_s": len(rays) / seconds / 1e6})
        print(f"  one process, {threads} thread(s): {len(rays) / seconds / 1e6:6.2f} Mrays/s")
    for workers in (1, 2):
        with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                      host="127.0.0.1", dashboard_address=None) as cluster, \
                distributed.Client(cluster) as client:
            scene = raypick.RaycastingScene(backend="cpu", nthreads=1)
            scene.add_triangles(v, t)
            shipped = rdask.scatter(scene, client)
            want = scene.cast_rays(rays)["t_hit"].view(np.uint32)
            # Rays already in the cluster's memory (where a distributed pipeline has
            # them), and rays sent from this process with every computation.
            resident = client.persist(da.from_array(rays, chunks=(100_000, 6)))
            distributed.wait(resident)
            for where, drays in (("rays on the workers", resident),
                                 ("rays sent from the client", da.from_array(rays, chunks=(100_000, 6)))):
                hits = rdask.cast_rays(shipped, drays)

                def run():
                    return dask.compute(*hits.values())

                seconds = best_of(run, repeat)
                same = np.array_equal(run()[0].view(np.uint32), want)
                setup = f"dask, {workers} worker process(es) x 1 thread, {where}"
                rows.append({"table": "dask", "setup": setup, "n": len(rays), "seconds": seconds,
                             "mrays_per_s": len(rays) / seconds / 1e6, "bit_identical": same})
                print(f"  {setup}: {len(rays) / seconds / 1e6:6.2f} Mrays/s (blocks of 100,000 "
                      f"rays; hits identical to one process: {same})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rays", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["throughput", "overhead", "inside", "dask"])
    args = parser.parse_args()

    meshes = {"bumpy sphere (generated)": bumpy_sphere(6), "terrain (generated)": terrain(224)}
    wuson = MODELS / "OFF" / "Wuson.off"
    if wuson.exists() and load_mesh(wuson) is not None:
        meshes["Wuson.off (assimp)"] = load_mesh(wuson)
    rows = []
    print(f"raypick {raypick.__version__}, Python {platform.python_version()}, "
          f"{os.cpu_count()} cores, {args.threads} threads, {args.rays} rays")
    if "throughput" not in args.skip:
        print("cast_rays throughput:")
        throughput(meshes, args.rays, args.threads, args.repeat, rows)
    v, t = meshes["bumpy sphere (generated)"]
    if "overhead" not in args.skip:
        print(f"Python layer against the Rust API (bumpy sphere, {args.rays} incoherent rays):")
        overhead(v, t, args.rays, args.threads, args.repeat, rows)
    if "inside" not in args.skip:
        print("inside/outside errors on points lined up with vertices and edges:")
        inside_outside(rows)
    if "dask" not in args.skip:
        print(f"Dask (bumpy sphere, {args.rays} incoherent rays):")
        dask_throughput(v, t, args.rays, args.repeat, rows)
    if args.json:
        args.json.write_text(json.dumps({"threads": args.threads, "rays": args.rays,
                                         "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
