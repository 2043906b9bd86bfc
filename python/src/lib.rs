//! `raypick._raypick`: the native part of raypick's Python package.
//!
//! The Python layer (`raypick/__init__.py`) checks shapes and dtypes, makes arrays
//! C-contiguous and shapes the results; this module checks the values again (a
//! direct caller gets a `ValueError`, never a crash), converts numpy memory to
//! raypick's types (without a copy where the layout is raypick's own) and runs every
//! query with the GIL released. Results are handed to numpy without a copy.

mod arrays;
mod hits;
mod parity;
mod scene;

use glam::{DVec3, Vec3};
use numpy::{PyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::{PyMemoryError, PyNotImplementedError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;
use raypick::Backend;

use arrays::Floats;
use scene::{Failure, Points, Positions, Rays, Source};

/// The Python exception of a failed query.
fn to_py(failure: Failure) -> PyErr {
    match failure {
        Failure::Value(message) => PyValueError::new_err(message),
        Failure::Unsupported(message) => PyNotImplementedError::new_err(message),
        // Bad input is a ValueError; everything else the library reports (no GPU
        // adapter, a lost device, ...) is a RuntimeError.
        Failure::Library(e) => match e {
            raypick::Error::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
            raypick::Error::IndexOutOfRange { .. }
            | raypick::Error::IndexCount { .. }
            | raypick::Error::TooManyTriangles { .. }
            | raypick::Error::OutputLength { .. }
            | raypick::Error::Instance { .. }
            | raypick::Error::InvalidArgument(_)
            | raypick::Error::UnknownName { .. }
            | raypick::Error::Unsupported { .. } => PyValueError::new_err(e.to_string()),
            other => PyRuntimeError::new_err(other.to_string()),
        },
    }
}

fn value_error(message: String) -> PyErr {
    PyValueError::new_err(message)
}

/// A one-dimensional numpy array.
type Array<'py, T> = Bound<'py, PyArray1<T>>;

/// `cast_rays`'s arrays: `t`, geometry ids, triangle ids, uvs, normals.
type CastArrays<'py> = (
    Array<'py, f32>,
    Array<'py, u32>,
    Array<'py, u32>,
    Array<'py, f32>,
    Array<'py, f32>,
);

/// `list_intersections`'s arrays: splits, ray ids, geometry ids, triangle ids, uvs, `t`.
type ListArrays<'py> = (
    Array<'py, u32>,
    Array<'py, u32>,
    Array<'py, u32>,
    Array<'py, u32>,
    Array<'py, f32>,
    Array<'py, f32>,
);

/// `closest_points`'s arrays: points, distances, geometry ids, triangle ids, uvs, normals.
type ClosestArrays<'py> = (
    Array<'py, f64>,
    Array<'py, f64>,
    Array<'py, u32>,
    Array<'py, u32>,
    Array<'py, f32>,
    Array<'py, f32>,
);

/// A numpy array that owns `v` (no copy).
fn array<T: numpy::Element>(py: Python<'_>, v: Vec<T>) -> Array<'_, T> {
    PyArray1::from_vec(py, v)
}

/// Rays from a `(n, 6)` or `(n, 8)` float array, checked.
fn with_rays<T>(
    py: Python<'_>,
    rays: &Bound<'_, PyAny>,
    f: impl FnOnce(Rays) -> Result<T, Failure> + Send,
) -> PyResult<T>
where
    T: Send,
{
    let floats = arrays::floats(rays, "rays", &[6, 8])?;
    match &floats {
        Floats::F32(a) => {
            let (data, columns) = (arrays::slice(a)?, a.shape()[1]);
            py.detach(|| f(arrays::rays_from_f32(data, columns).map_err(Failure::Value)?))
        }
        Floats::F64(a) => {
            let (data, columns) = (arrays::slice(a)?, a.shape()[1]);
            py.detach(|| f(arrays::rays_from_f64(data, columns).map_err(Failure::Value)?))
        }
    }
    .map_err(to_py)
}

/// Points from a `(n, 3)` float array, checked.
fn with_points<T>(
    py: Python<'_>,
    points: &Bound<'_, PyAny>,
    f: impl FnOnce(Points) -> Result<T, Failure> + Send,
) -> PyResult<T>
where
    T: Send,
{
    let floats = arrays::floats(points, "query_points", &[3])?;
    match &floats {
        Floats::F32(a) => {
            let data = arrays::slice(a)?;
            py.detach(|| f(arrays::points_from_f32(data, "query_points").map_err(Failure::Value)?))
        }
        Floats::F64(a) => {
            let data = arrays::slice(a)?;
            py.detach(|| f(arrays::points_from_f64(data, "query_points").map_err(Failure::Value)?))
        }
    }
    .map_err(to_py)
}

/// A row-major 4x4 transform.
fn transform_from(obj: &Bound<'_, PyAny>) -> PyResult<[[f64; 4]; 4]> {
    let a: PyReadonlyArray2<'_, f64> = obj
        .extract()
        .map_err(|_| value_error("transform must be a (4, 4) float64 numpy array".into()))?;
    if a.shape() != [4, 4] {
        return Err(value_error(format!(
            "transform must have shape (4, 4), got {:?}",
            a.shape()
        )));
    }
    let m = a.as_array();
    Ok([0, 1, 2, 3].map(|r| [0, 1, 2, 3].map(|c| m[[r, c]])))
}

/// The scene: meshes placed as given or by transforms, and the queries on them.
///
/// `raypick.RaycastingScene` wraps it; see its documentation.
#[pyclass(module = "raypick._raypick", name = "Scene")]
struct PyScene {
    inner: scene::Scene,
}

#[pymethods]
impl PyScene {
    /// A scene traced on `backend` (`"auto"`, `"cpu"` or `"gpu"`) with `threads` CPU
    /// threads (0: all cores).
    #[new]
    #[pyo3(signature = (backend = "auto", threads = 0))]
    fn new(py: Python<'_>, backend: &str, threads: usize) -> PyResult<Self> {
        let backend: Backend = match backend {
            "auto" => Backend::Auto,
            "cpu" => Backend::Cpu,
            "gpu" => Backend::Gpu,
            other => {
                return Err(value_error(format!(
                    "backend must be \"auto\", \"cpu\" or \"gpu\", got {other:?}"
                )));
            }
        };
        let inner = py
            .detach(|| scene::Scene::new(backend, threads))
            .map_err(to_py)?;
        Ok(Self { inner })
    }

    /// What traces: `"cpu"` or `"gpu"`.
    #[getter]
    fn backend(&self) -> &'static str {
        match self.inner.picker().backend() {
            Backend::Gpu => "gpu",
            _ => "cpu",
        }
    }

    /// The device that traces (the GPU adapter, or the CPU and its threads).
    #[getter]
    fn device(&self) -> String {
        self.inner.picker().device_name()
    }

    /// Why `"auto"` uses the CPU, if it does.
    #[getter]
    fn fallback_reason(&self) -> Option<String> {
        self.inner.picker().fallback_reason().map(str::to_owned)
    }

    /// Adds a mesh: vertices `(V, 3)` float32 or float64, triangles `(T, 3)` uint32.
    /// Returns its geometry id.
    fn add_mesh(
        &mut self,
        py: Python<'_>,
        vertices: &Bound<'_, PyAny>,
        triangles: PyReadonlyArray2<'_, u32>,
    ) -> PyResult<u32> {
        if triangles.shape()[1] != 3 || !triangles.is_c_contiguous() {
            return Err(value_error(
                "triangles must be a C-contiguous (T, 3) uint32 array".into(),
            ));
        }
        let tri = arrays::slice(&triangles)?;
        let floats = arrays::floats(vertices, "vertices", &[3])?;
        let positions = match &floats {
            Floats::F32(a) => {
                let data = arrays::slice(a)?;
                py.detach(|| {
                    let p: Vec<Vec3> = data
                        .chunks_exact(3)
                        .map(|r| Vec3::new(r[0], r[1], r[2]))
                        .collect();
                    arrays::first_non_finite(p.iter().map(|v| v.is_finite()), "vertices")
                        .map(|_| Positions::F32(p))
                })
            }
            Floats::F64(a) => {
                let data = arrays::slice(a)?;
                py.detach(|| {
                    let p: Vec<DVec3> = data
                        .chunks_exact(3)
                        .map(|r| DVec3::new(r[0], r[1], r[2]))
                        .collect();
                    arrays::first_non_finite(p.iter().map(|v| v.is_finite()), "vertices")
                        .map(|_| Positions::F64(p))
                })
            }
        }
        .map_err(value_error)?;
        let triangles = tri.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect();
        let inner = &mut self.inner;
        py.detach(|| {
            inner.add_mesh(Source {
                positions,
                triangles,
            })
        })
        .map_err(to_py)
    }

    /// Adds another placement of geometry `geometry_id`'s mesh by a (4, 4) float64
    /// transform; returns the new geometry id.
    fn add_instance(&mut self, geometry_id: u32, transform: &Bound<'_, PyAny>) -> PyResult<u32> {
        let transform = transform_from(transform)?;
        self.inner
            .add_instance(geometry_id, transform)
            .map_err(to_py)
    }

    /// Places geometry `geometry_id` by a (4, 4) float64 transform.
    fn set_transform(&mut self, geometry_id: u32, transform: &Bound<'_, PyAny>) -> PyResult<()> {
        let transform = transform_from(transform)?;
        self.inner
            .set_transform(geometry_id, transform)
            .map_err(to_py)
    }

    /// Number of geometries.
    fn __len__(&self) -> usize {
        self.inner.placements().len()
    }

    /// The closest hit per ray: `(t_hit, geometry_ids, primitive_ids, uvs (2n),
    /// normals (3n))`.
    fn cast_rays<'py>(
        &self,
        py: Python<'py>,
        rays: &Bound<'py, PyAny>,
    ) -> PyResult<CastArrays<'py>> {
        let inner = &self.inner;
        let cast = with_rays(py, rays, |rays| inner.cast_rays(&rays))?;
        Ok((
            array(py, cast.t),
            array(py, cast.geometry),
            array(py, cast.primitive),
            array(py, cast.uv),
            array(py, cast.normal),
        ))
    }

    /// Whether each ray hits anything in `[tnear, tfar]` (and its own interval).
    fn test_occlusions<'py>(
        &self,
        py: Python<'py>,
        rays: &Bound<'py, PyAny>,
        tnear: f64,
        tfar: f64,
    ) -> PyResult<Array<'py, bool>> {
        if tnear.is_nan() || tfar.is_nan() {
            return Err(value_error("tnear and tfar must not be NaN".into()));
        }
        let inner = &self.inner;
        let occluded = with_rays(py, rays, |rays| {
            let rays = if tnear == 0.0 && tfar == f64::INFINITY {
                rays
            } else {
                rays.clip(tnear, tfar)
            };
            inner.occluded(&rays)
        })?;
        Ok(array(py, occluded))
    }

    /// The number of triangles each ray hits.
    fn count_intersections<'py>(
        &self,
        py: Python<'py>,
        rays: &Bound<'py, PyAny>,
    ) -> PyResult<Array<'py, i32>> {
        let inner = &self.inner;
        let counts = with_rays(py, rays, |rays| inner.count_intersections(&rays))?;
        Ok(array(py, counts))
    }

    /// Every hit of every ray: `(ray_splits, ray_ids, geometry_ids, primitive_ids,
    /// uvs (2m), t_hit)`.
    fn list_intersections<'py>(
        &self,
        py: Python<'py>,
        rays: &Bound<'py, PyAny>,
    ) -> PyResult<ListArrays<'py>> {
        let inner = &self.inner;
        let listed = with_rays(py, rays, |rays| inner.list_intersections(&rays))?;
        Ok((
            array(py, listed.splits),
            array(py, listed.ray),
            array(py, listed.geometry),
            array(py, listed.primitive),
            array(py, listed.uv),
            array(py, listed.t),
        ))
    }

    /// The closest point of the surface to each point: `(points (3n, f64), distances
    /// (f64), geometry_ids, primitive_ids, uvs (2n), normals (3n))`.
    fn closest_points<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
    ) -> PyResult<ClosestArrays<'py>> {
        let inner = &self.inner;
        let found = with_points(py, points, |points| inner.closest_points(&points))?;
        Ok((
            array(py, found.point),
            array(py, found.distance),
            array(py, found.geometry),
            array(py, found.primitive),
            array(py, found.uv),
            array(py, found.normal),
        ))
    }

    /// Inside (`True`) or outside per point by the parity of crossings, and the number
    /// of rays each point needed.
    #[pyo3(signature = (points, nsamples = 1))]
    fn occupancy<'py>(
        &self,
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
        nsamples: usize,
    ) -> PyResult<(Array<'py, bool>, Array<'py, u8>)> {
        let inner = &self.inner;
        let (inside, rays) = with_points(py, points, |points| inner.occupancy(&points, nsamples))?;
        Ok((array(py, inside), array(py, rays)))
    }

    /// The scene's content: `(meshes, geometries)`, meshes as `(vertices, triangles)`
    /// arrays (copies, in the precision given), geometries as `(mesh index, transform
    /// or None)`.
    fn export<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyList>)> {
        let meshes = PyList::empty(py);
        for source in self.inner.meshes() {
            let vertices = match &source.positions {
                Positions::F32(p) => {
                    array(py, p.iter().flat_map(|v| v.to_array()).collect()).into_any()
                }
                Positions::F64(p) => {
                    array(py, p.iter().flat_map(|v| v.to_array()).collect()).into_any()
                }
            };
            let triangles = array(py, source.triangles.iter().flatten().copied().collect());
            meshes.append((vertices, triangles))?;
        }
        let geometries = PyList::empty(py);
        for placement in self.inner.placements() {
            let transform = placement
                .transform
                .map(|m| array(py, m.iter().flatten().copied().collect::<Vec<f64>>()));
            geometries.append((placement.mesh, transform))?;
        }
        Ok((meshes, geometries))
    }
}

/// The parity ray directions (16 rows of 3 float32 values: the lines of
/// `compute_occupancy`, then the same lines reversed).
#[pyfunction]
fn parity_directions(py: Python<'_>) -> Array<'_, f32> {
    array(
        py,
        (0..parity::DIRECTIONS)
            .flat_map(|i| parity::direction(i).to_array())
            .collect(),
    )
}

/// The native module.
#[pymodule]
fn _raypick(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyScene>()?;
    m.add_function(wrap_pyfunction!(parity_directions, m)?)?;
    m.add("INVALID_ID", scene::INVALID_ID)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
