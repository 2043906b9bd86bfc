//! Embree 3 (the system's `libembree3.so.3`, Debian's `libembree-dev`) as a picking
//! backend, loaded at run time with `dlopen`, so that building the benches never
//! needs Embree and a machine without it runs the comparison without this column.
//!
//! * **Build**: one `RTC_GEOMETRY_TYPE_TRIANGLE` over the proper triangles (see the
//!   module docs of `compare`), vertices shared as `float3` with a 16-byte stride
//!   (Embree reads each vertex as 16 bytes), default scene flags and build quality
//!   (medium), the device limited to the bench's thread count (`threads=N`).
//! * **Trace**: one `rtcIntersect1` per ray, rays spread over the bench's rayon pool
//!   in tasks of the same grain as the other libraries; the intersect context is
//!   the one `rtcInitIntersectContext` makes (incoherent flag, no filter).
//! * **Interval**: Embree looks forward from `tnear >= 0` to `tfar`; a negative
//!   `tmin` moves the origin as for parry3d and obvhs.
//! * **Back faces**: hit (no culling in Debian's build). `u`, `v` are Embree's
//!   barycentric weights of `v1`, `v2`, as raypick's.
//! * **Ties** on equal `t`: whichever triangle Embree's traversal meets first.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::time::{Duration, Instant};

use glam::Vec3;
use rayon::prelude::*;
use raypick::{Hit, Mesh, Ray};

use super::{RAYS_PER_TASK, forward_segment, proper_subset};

/// The shared object the benches look for.
const LIBRARY: &str = "libembree3.so.3";

const RTC_GEOMETRY_TYPE_TRIANGLE: c_int = 0;
const RTC_BUFFER_TYPE_INDEX: c_int = 0;
const RTC_BUFFER_TYPE_VERTEX: c_int = 1;
const RTC_FORMAT_UINT3: c_int = 0x5003;
const RTC_FORMAT_FLOAT3: c_int = 0x9003;
const RTC_INVALID_GEOMETRY_ID: c_uint = u32::MAX;
/// `RTC_INTERSECT_CONTEXT_FLAG_INCOHERENT`.
const INCOHERENT: c_int = 0;

type Handle = *mut c_void;

/// `struct RTCRay` (16-byte aligned).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct RtcRay {
    org: [f32; 3],
    tnear: f32,
    dir: [f32; 3],
    time: f32,
    tfar: f32,
    mask: u32,
    id: u32,
    flags: u32,
}

/// `struct RTCHit` with one instance level (Debian's build).
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct RtcHit {
    ng: [f32; 3],
    u: f32,
    v: f32,
    prim_id: u32,
    geom_id: u32,
    inst_id: [u32; 1],
}

/// `struct RTCRayHit`.
#[repr(C)]
#[derive(Clone, Copy)]
struct RtcRayHit {
    ray: RtcRay,
    hit: RtcHit,
}

/// `struct RTCIntersectContext` with one instance level and no minimum width.
#[repr(C)]
struct RtcContext {
    flags: c_int,
    filter: *const c_void,
    inst_id: [u32; 1],
}

const _: () = assert!(size_of::<RtcRayHit>() == 80);

/// The entry points the benches call, looked up once.
struct Api {
    new_device: unsafe extern "C" fn(*const c_char) -> Handle,
    release_device: unsafe extern "C" fn(Handle),
    get_device_error: unsafe extern "C" fn(Handle) -> c_int,
    new_scene: unsafe extern "C" fn(Handle) -> Handle,
    release_scene: unsafe extern "C" fn(Handle),
    commit_scene: unsafe extern "C" fn(Handle),
    new_geometry: unsafe extern "C" fn(Handle, c_int) -> Handle,
    set_shared_buffer:
        unsafe extern "C" fn(Handle, c_int, c_uint, c_int, *const c_void, usize, usize, usize),
    commit_geometry: unsafe extern "C" fn(Handle),
    attach_geometry: unsafe extern "C" fn(Handle, Handle) -> c_uint,
    release_geometry: unsafe extern "C" fn(Handle),
    intersect1: unsafe extern "C" fn(Handle, *mut RtcContext, *mut RtcRayHit),
}

impl Api {
    /// Opens the library, or says why not.
    fn open() -> Result<Self, String> {
        let name = CString::new(LIBRARY).expect("no NUL in the name");
        // SAFETY: dlopen with a valid C string; the handle is never closed, so the
        // function pointers stay valid for the life of the process.
        let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            // SAFETY: dlerror returns a C string or null.
            let why = unsafe { libc::dlerror() };
            let why = if why.is_null() {
                "unknown error".into()
            } else {
                // SAFETY: non-null, NUL-terminated by dlerror.
                unsafe { CStr::from_ptr(why) }
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(format!(
                "{LIBRARY} did not load ({why}); install libembree-dev"
            ));
        }
        let symbol = |name: &str| -> Result<*mut c_void, String> {
            let c = CString::new(name).expect("no NUL in the name");
            // SAFETY: `lib` is a live handle and `c` a valid C string.
            let f = unsafe { libc::dlsym(lib, c.as_ptr()) };
            if f.is_null() {
                Err(format!("{LIBRARY} has no {name}"))
            } else {
                Ok(f)
            }
        };
        /// A symbol as the function pointer type `F`.
        ///
        /// # Safety
        /// The symbol must be a function of type `F`.
        unsafe fn function<F: Copy>(symbol: *mut c_void) -> F {
            assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
            // SAFETY: a function pointer of the size of a data pointer, as the
            // caller promises.
            unsafe { std::mem::transmute_copy(&symbol) }
        }
        // SAFETY (every `function`): the symbols are Embree 3's C functions with the
        // signatures of `rtcore_*.h` that the fields declare.
        unsafe {
            Ok(Self {
                new_device: function(symbol("rtcNewDevice")?),
                release_device: function(symbol("rtcReleaseDevice")?),
                get_device_error: function(symbol("rtcGetDeviceError")?),
                new_scene: function(symbol("rtcNewScene")?),
                release_scene: function(symbol("rtcReleaseScene")?),
                commit_scene: function(symbol("rtcCommitScene")?),
                new_geometry: function(symbol("rtcNewGeometry")?),
                set_shared_buffer: function(symbol("rtcSetSharedGeometryBuffer")?),
                commit_geometry: function(symbol("rtcCommitGeometry")?),
                attach_geometry: function(symbol("rtcAttachGeometry")?),
                release_geometry: function(symbol("rtcReleaseGeometry")?),
                intersect1: function(symbol("rtcIntersect1")?),
            })
        }
    }

    /// The library, opened once per process.
    fn get() -> Result<&'static Api, String> {
        static CELL: std::sync::OnceLock<Result<Api, String>> = std::sync::OnceLock::new();
        CELL.get_or_init(Api::open).as_ref().map_err(Clone::clone)
    }
}

/// An Embree scene over a mesh's proper triangles.
pub struct Embree {
    api: &'static Api,
    device: Handle,
    scene: Handle,
    /// Vertices as Embree reads them (shared, so kept alive here): x, y, z, pad.
    _vertices: Vec<[f32; 4]>,
    _indices: Vec<[u32; 3]>,
    /// Embree primitive id → input triangle id.
    ids: Vec<u32>,
    /// Time of `rtcCommitScene` (the BVH build).
    pub build_time: Duration,
}

// SAFETY: Embree scenes are safe to trace from many threads once committed, and
// nothing here is written after `build`.
unsafe impl Send for Embree {}
// SAFETY: as above.
unsafe impl Sync for Embree {}

impl Embree {
    /// Whether Embree loads here, or why not.
    pub fn available() -> Result<(), String> {
        Api::get().map(|_| ())
    }

    /// Builds a scene over the proper triangles of `mesh` on a device of `threads`
    /// threads, or says why Embree is not available.
    pub fn build(mesh: &Mesh, threads: usize) -> Result<Self, String> {
        let api = Api::get()?;
        let (positions, indices, ids) = proper_subset(mesh);
        let vertices: Vec<[f32; 4]> = positions.iter().map(|p| p.extend(0.0).to_array()).collect();
        let config = CString::new(format!("threads={threads},set_affinity=0")).expect("no NUL");
        // SAFETY: Embree's C API, called as `rtcore_*.h` documents: the buffers
        // outlive the scene (they are fields of the value returned) and every
        // handle is released in `drop`.
        unsafe {
            let device = (api.new_device)(config.as_ptr());
            if device.is_null() {
                return Err("rtcNewDevice failed".into());
            }
            let scene = (api.new_scene)(device);
            let start = Instant::now();
            if !indices.is_empty() {
                let geometry = (api.new_geometry)(device, RTC_GEOMETRY_TYPE_TRIANGLE);
                (api.set_shared_buffer)(
                    geometry,
                    RTC_BUFFER_TYPE_VERTEX,
                    0,
                    RTC_FORMAT_FLOAT3,
                    vertices.as_ptr().cast(),
                    0,
                    size_of::<[f32; 4]>(),
                    vertices.len(),
                );
                (api.set_shared_buffer)(
                    geometry,
                    RTC_BUFFER_TYPE_INDEX,
                    0,
                    RTC_FORMAT_UINT3,
                    indices.as_ptr().cast(),
                    0,
                    size_of::<[u32; 3]>(),
                    indices.len(),
                );
                (api.commit_geometry)(geometry);
                (api.attach_geometry)(scene, geometry);
                (api.release_geometry)(geometry);
            }
            (api.commit_scene)(scene);
            let build_time = start.elapsed();
            let error = (api.get_device_error)(device);
            let embree = Self {
                api,
                device,
                scene,
                _vertices: vertices,
                _indices: indices,
                ids,
                build_time,
            };
            if error != 0 {
                return Err(format!("Embree reported error {error} while building"));
            }
            Ok(embree)
        }
    }

    /// Traces `rays` in parallel on the calling pool, one hit per ray.
    pub fn trace(&self, rays: &[Ray]) -> Vec<Hit> {
        rays.par_iter()
            .with_min_len(RAYS_PER_TASK)
            .map(|ray| self.trace_one(ray))
            .collect()
    }

    /// Traces `rays` one after another on the calling thread into `hits` (one slot
    /// per ray, as raypick's `trace_into` takes them, so that neither library's
    /// time includes an allocation).
    pub fn trace_serial_into(&self, rays: &[Ray], hits: &mut [Hit]) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        for (ray, hit) in rays.iter().zip(hits) {
            *hit = self.trace_one(ray);
        }
    }

    fn trace_one(&self, ray: &Ray) -> Hit {
        let Some((origin, shift, tnear, tfar)) = forward_segment(ray) else {
            return Hit::MISS;
        };
        let mut rayhit = RtcRayHit {
            ray: RtcRay {
                org: origin.to_array(),
                tnear,
                dir: ray.dir.to_array(),
                time: 0.0,
                tfar,
                mask: u32::MAX,
                id: 0,
                flags: 0,
            },
            hit: RtcHit {
                ng: Vec3::ZERO.to_array(),
                u: 0.0,
                v: 0.0,
                prim_id: RTC_INVALID_GEOMETRY_ID,
                geom_id: RTC_INVALID_GEOMETRY_ID,
                inst_id: [RTC_INVALID_GEOMETRY_ID],
            },
        };
        let mut context = RtcContext {
            flags: INCOHERENT,
            filter: std::ptr::null(),
            inst_id: [RTC_INVALID_GEOMETRY_ID],
        };
        // SAFETY: a committed scene, a context as `rtcInitIntersectContext` makes it
        // and a 16-byte aligned ray-hit.
        unsafe { (self.api.intersect1)(self.scene, &mut context, &mut rayhit) };
        if rayhit.hit.geom_id == RTC_INVALID_GEOMETRY_ID {
            return Hit::MISS;
        }
        Hit {
            t: shift + rayhit.ray.tfar,
            u: rayhit.hit.u,
            v: rayhit.hit.v,
            prim: self.ids[rayhit.hit.prim_id as usize],
        }
    }
}

impl Drop for Embree {
    fn drop(&mut self) {
        // SAFETY: handles made in `build`, released once.
        unsafe {
            (self.api.release_scene)(self.scene);
            (self.api.release_device)(self.device);
        }
    }
}
