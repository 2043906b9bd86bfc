//! An independent check of screen picking: the GPU's rasteriser draws the
//! triangle-id buffer of a mesh (a wgpu render pipeline, depth test, one flat `u32`
//! id per triangle, cleared to the miss marker) and raypick picks every pixel
//! centre with rays of the same camera. The two must agree on at least 99.5 % of
//! the covered pixels, and every disagreement must be explained: the pixel centre
//! lies within one pixel of an edge of one of the two triangles in screen space
//! (where rasterisation rules and rounding decide), or both triangles cross at
//! that depth (where the depth buffer's rounding decides).
//!
//! Cameras: the look-at form (`Camera::view_projection` for the rasteriser,
//! `Camera::primary_rays` for the rays) and the inverse view-projection form
//! (`Unprojector`) with a reversed-Z infinite perspective and an orthographic
//! projection.

use crate::support::{buffer_init, read_mapped};
use glam::camera::rh::proj::directx;
use glam::{DVec2, Mat4, Vec3};
use raypick::camera::{Camera, Unprojector, aspect};
use raypick::gpu::GpuContext;
use raypick::types::MISS;
use raypick::{Accel, Mesh, Ray, TraceOptions};
use raypick_testkit::fixtures;

const SIZE: u32 = 256;
const ID_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::R32Uint;
const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

const SHADER: &str = r"
@group(0) @binding(0) var<uniform> view_proj: mat4x4<f32>;

struct Varyings {
    @builtin(position) position: vec4<f32>,
    @location(0) @interpolate(flat) id: u32,
}

@vertex
fn vs(@location(0) position: vec3<f32>, @location(1) id: u32) -> Varyings {
    return Varyings(view_proj * vec4<f32>(position, 1.0), id);
}

@fragment
fn fs(in: Varyings) -> @location(0) u32 {
    return in.id;
}
";

/// How the rasteriser's depth test runs.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Depth {
    /// Depth 0 near, 1 far; keep the smaller.
    Standard,
    /// Depth 1 near, 0 far (reversed-Z); keep the larger.
    Reversed,
}

/// One camera, in the two forms: the matrix the rasteriser uses and the rays
/// raypick traces.
struct View {
    name: &'static str,
    view_proj: Mat4,
    depth: Depth,
    rays: Vec<Ray>,
}

/// Near and far planes (view depths) that enclose `bounds` seen by `camera`.
fn depth_range(camera: &Camera, (lo, hi): (Vec3, Vec3)) -> (f32, f32) {
    let [f, _, _] = camera.basis();
    let depths = (0..8).map(|i| {
        let corner = Vec3::new(
            if i & 1 != 0 { hi.x } else { lo.x },
            if i & 2 != 0 { hi.y } else { lo.y },
            if i & 4 != 0 { hi.z } else { lo.z },
        );
        (corner - camera.eye).dot(f)
    });
    let (near, far) = depths.fold((f32::MAX, f32::MIN), |(a, b), d| (a.min(d), b.max(d)));
    assert!(near > 0.0, "the box is in front of the camera");
    (0.5 * near, 2.0 * far)
}

/// The look-at camera framing `mesh` from `from`: the rasteriser gets
/// `perspective * look_at`, the rays are `Camera::primary_rays`.
fn look_at_view(name: &'static str, mesh: &Mesh, from: Vec3, fov_deg: f32) -> View {
    let bounds = mesh.bounds().expect("bounds");
    let camera = Camera::framing(
        bounds.0,
        bounds.1,
        from,
        fov_deg.to_radians(),
        aspect(SIZE, SIZE),
    );
    let (near, far) = depth_range(&camera, bounds);
    View {
        name,
        view_proj: camera.view_projection(aspect(SIZE, SIZE), near, far),
        depth: Depth::Standard,
        rays: camera.primary_rays(SIZE, SIZE),
    }
}

/// The same framing with a reversed-Z perspective whose far plane is at infinity;
/// the rays come from the matrix (`Unprojector`).
fn reversed_z_view(name: &'static str, mesh: &Mesh, from: Vec3, fov_deg: f32) -> View {
    let bounds = mesh.bounds().expect("bounds");
    let camera = Camera::framing(
        bounds.0,
        bounds.1,
        from,
        fov_deg.to_radians(),
        aspect(SIZE, SIZE),
    );
    let (near, _) = depth_range(&camera, bounds);
    let view_proj = directx::perspective_infinite_reverse(camera.fov_y, aspect(SIZE, SIZE), near)
        * camera.view_matrix();
    let rays = Unprojector::new(view_proj, SIZE, SIZE)
        .expect("invertible")
        .primary_rays();
    View {
        name,
        view_proj,
        depth: Depth::Reversed,
        rays,
    }
}

/// An orthographic view along `-from` that just fits the mesh's bounding sphere;
/// rays from the matrix (`Unprojector`), starting on the near plane.
fn orthographic_view(name: &'static str, mesh: &Mesh, from: Vec3) -> View {
    let (lo, hi) = mesh.bounds().expect("bounds");
    let (center, radius) = (0.5 * (lo + hi), 0.5 * (hi - lo).length());
    let eye = center + 2.0 * radius * from.normalize();
    let camera = Camera::new(eye, center, Vec3::Y, 1.0);
    let r = 1.02 * radius;
    let view_proj =
        directx::orthographic(-r, r, -r, r, 0.5 * radius, 4.0 * radius) * camera.view_matrix();
    let rays = Unprojector::new(view_proj, SIZE, SIZE)
        .expect("invertible")
        .primary_rays();
    View {
        name,
        view_proj,
        depth: Depth::Standard,
        rays,
    }
}

/// Draws the triangle-id buffer of `mesh` seen through `view` (row-major, top row
/// first; [`MISS`] where no triangle covers the pixel centre).
fn raster_ids(gpu: &GpuContext, mesh: &Mesh, view: &View) -> Vec<u32> {
    let (device, queue) = (gpu.device(), gpu.queue());
    // Non-indexed: three vertices per triangle, each carrying the triangle's id.
    let vertices: Vec<[u32; 4]> = mesh
        .triangles()
        .enumerate()
        .flat_map(|(id, tri)| tri.map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits(), id as u32]))
        .collect();
    let vertex_buffer = buffer_init(device, &vertices, wgpu::BufferUsages::VERTEX);
    let uniform = buffer_init(
        device,
        &view.view_proj.to_cols_array(),
        wgpu::BufferUsages::UNIFORM,
    );

    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("triangle ids"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: None,
        entries: &[wgpu::BindGroupLayoutEntry {
            binding: 0,
            visibility: wgpu::ShaderStages::VERTEX,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Uniform,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        }],
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: uniform.as_entire_binding(),
        }],
    });
    let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: None,
        bind_group_layouts: &[Some(&layout)],
        immediate_size: 0,
    });
    let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Uint32];
    let (compare, clear_depth) = match view.depth {
        Depth::Standard => (wgpu::CompareFunction::Less, 1.0),
        Depth::Reversed => (wgpu::CompareFunction::Greater, 0.0),
    };
    let pipeline = device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("triangle ids"),
        layout: Some(&pipeline_layout),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: 16,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
        },
        primitive: wgpu::PrimitiveState::default(), // triangle list, no culling
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(compare),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(ID_FORMAT.into())],
        }),
        multiview_mask: None,
        cache: None,
    });

    let texture = |format, usage| {
        device.create_texture(&wgpu::TextureDescriptor {
            label: None,
            size: wgpu::Extent3d {
                width: SIZE,
                height: SIZE,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage,
            view_formats: &[],
        })
    };
    let ids = texture(
        ID_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
    );
    let depth = texture(DEPTH_FORMAT, wgpu::TextureUsages::RENDER_ATTACHMENT);
    let bytes_per_row = 4 * SIZE; // 1024: a multiple of COPY_BYTES_PER_ROW_ALIGNMENT
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: (bytes_per_row * SIZE) as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });

    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let ids_view = ids.create_view(&Default::default());
        let depth_view = depth.create_view(&Default::default());
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: None,
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &ids_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color {
                        r: MISS as f64,
                        g: 0.0,
                        b: 0.0,
                        a: 0.0,
                    }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &depth_view,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(clear_depth),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.set_vertex_buffer(0, vertex_buffer.slice(..));
        pass.draw(0..vertices.len() as u32, 0..1);
    }
    encoder.copy_texture_to_buffer(
        ids.as_image_copy(),
        wgpu::TexelCopyBufferInfo {
            buffer: &readback,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(bytes_per_row),
                rows_per_image: None,
            },
        },
        wgpu::Extent3d {
            width: SIZE,
            height: SIZE,
            depth_or_array_layers: 1,
        },
    );
    queue.submit([encoder.finish()]);
    read_mapped(device, &readback)
}

/// Distance in pixels from screen point `p` to the segment `a`–`b`.
fn segment_distance(p: DVec2, a: DVec2, b: DVec2) -> f64 {
    let ab = b - a;
    let s = ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
    if s.is_finite() {
        p.distance(a + s * ab)
    } else {
        p.distance(a)
    }
}

/// Distance in pixels from the centre of pixel `(px, py)` to the nearest edge of
/// triangle `k` projected to the screen (infinite when a vertex cannot be projected).
fn edge_distance(screen: &Unprojector, mesh: &Mesh, k: u32, px: u32, py: u32) -> f64 {
    let centre = DVec2::new(px as f64 + 0.5, py as f64 + 0.5);
    let tri = mesh.triangle(k as usize).map(|v| screen.project(v));
    let [Some(a), Some(b), Some(c)] = tri else {
        return f64::INFINITY;
    };
    segment_distance(centre, a, b)
        .min(segment_distance(centre, b, c))
        .min(segment_distance(centre, c, a))
}

/// Agreement of the two id buffers over one view.
#[derive(Debug, Default)]
struct Agreement {
    /// Pixels that either side sees a triangle in.
    covered: usize,
    /// Covered pixels with the same triangle id on both sides.
    agree: usize,
    /// Disagreements within one pixel of an edge of either triangle.
    near_edge: usize,
    /// The largest distance (pixels) from such a pixel centre to the nearer edge.
    worst_edge_distance: f64,
    /// Disagreements where both triangles are hit by the ray at nearly the same
    /// distance (surfaces crossing; the depth buffer's rounding decides).
    depth_tie: usize,
    /// The rest: `(px, py, raster id, picked id)`.
    unexplained: Vec<(u32, u32, u32, u32)>,
}

fn crosscheck(gpu: &GpuContext, mesh_name: &str, mesh: &Mesh, view: &View) -> Agreement {
    let raster = raster_ids(gpu, mesh, view);
    let uploaded = gpu.upload_with(mesh, Accel::Bvh).expect("upload");
    let hits = gpu
        .trace(&uploaded, &view.rays, &TraceOptions::default())
        .expect("trace");
    let screen = Unprojector::new(view.view_proj, SIZE, SIZE).expect("invertible");
    let mut agreement = Agreement::default();
    for (i, (&drawn, hit)) in raster.iter().zip(&hits).enumerate() {
        let (px, py) = (i as u32 % SIZE, i as u32 / SIZE);
        if drawn == MISS && !hit.is_hit() {
            continue;
        }
        agreement.covered += 1;
        if drawn == hit.prim {
            agreement.agree += 1;
            continue;
        }
        let distance = [drawn, hit.prim]
            .into_iter()
            .filter(|&k| k != MISS)
            .map(|k| edge_distance(&screen, mesh, k, px, py))
            .fold(f64::INFINITY, f64::min);
        if distance <= 1.0 {
            agreement.near_edge += 1;
            agreement.worst_edge_distance = agreement.worst_edge_distance.max(distance);
            continue;
        }
        let ray = &view.rays[i];
        let t = |k: u32| {
            raypick_testkit::reference::intersect_f64(ray, mesh.triangle(k as usize), 1e-3)
                .map(|h| h.t)
        };
        if let (true, Some(a), Some(b)) = (drawn != MISS, t(drawn), t(hit.prim))
            && (a - b).abs() <= 1e-3 * a.max(b)
        {
            agreement.depth_tie += 1;
            continue;
        }
        agreement.unexplained.push((px, py, drawn, hit.prim));
    }
    let share = 100.0 * agreement.agree as f64 / agreement.covered.max(1) as f64;
    eprintln!(
        "{mesh_name:<28} {:<34} covered {:>6}, agree {:>6} ({share:.3} %), near an edge {} (at most {:.4} px away), depth tie {}, unexplained {}",
        view.name,
        agreement.covered,
        agreement.agree,
        agreement.near_edge,
        agreement.worst_edge_distance,
        agreement.depth_tie,
        agreement.unexplained.len()
    );
    agreement
}

fn assert_agreement(mesh_name: &str, mesh: &Mesh, views: &[View]) {
    let Some(gpu) = crate::support::gpu() else {
        return;
    };
    for view in views {
        let a = crosscheck(gpu, mesh_name, mesh, view);
        let what = format!("{mesh_name}, {}", view.name);
        assert!(
            a.covered >= (SIZE * SIZE / 8) as usize,
            "{what}: the mesh covers only {} pixels",
            a.covered
        );
        assert!(
            a.agree as f64 >= 0.995 * a.covered as f64,
            "{what}: {} of {} covered pixels agree",
            a.agree,
            a.covered
        );
        assert!(
            a.unexplained.is_empty(),
            "{what}: {} disagreements away from any edge, first (px, py, raster, picked): {:?}",
            a.unexplained.len(),
            &a.unexplained[..a.unexplained.len().min(8)]
        );
    }
}

#[test]
fn icosphere_ids_match_the_rasteriser() {
    let mesh = fixtures::icosphere(4, 1.0, Vec3::new(0.5, -0.25, 2.0));
    assert_agreement(
        "icosphere (5120 triangles)",
        &mesh,
        &[
            look_at_view(
                "look-at, framed from +z",
                &mesh,
                Vec3::new(0.2, 0.4, 1.0),
                50.0,
            ),
            orthographic_view("orthographic, from -x", &mesh, Vec3::new(-1.0, 0.3, 0.2)),
        ],
    );
}

#[test]
fn dense_grid_ids_match_the_rasteriser() {
    let mesh = fixtures::grid(96, 96, 10.0);
    assert_agreement(
        "grid (18432 triangles)",
        &mesh,
        &[
            look_at_view("look-at, oblique", &mesh, Vec3::new(0.3, -1.0, 0.45), 45.0),
            reversed_z_view(
                "reversed-Z infinite, from above",
                &mesh,
                Vec3::new(0.1, 0.2, 1.0),
                60.0,
            ),
        ],
    );
}

#[test]
fn builtin_scene_ids_match_the_rasteriser() {
    let mesh = fixtures::builtin_scene(20_000);
    assert_agreement(
        "builtin scene (20000 triangles)",
        &mesh,
        &[
            look_at_view("look-at, bench view", &mesh, Vec3::new(0.2, 1.0, 1.0), 50.0),
            reversed_z_view(
                "reversed-Z infinite, low side view",
                &mesh,
                Vec3::new(-1.0, 0.35, 0.4),
                40.0,
            ),
        ],
    );
}
