//! A window that draws a mesh with wgpu and highlights the triangle under the mouse,
//! picked by raypick on the renderer's own device.
//!
//! ```sh
//! cargo run --release --example interactive_pick -- [MESH | --triangles N]
//!     [--backend gpu|cpu] [--size WxH] [--mouse X,Y] [--frames N] [--screenshot out.png]
//! ```
//!
//! The mesh (a file, or with none a generated scene from `raypick_testkit::fixtures` of
//! `--triangles N` triangles, default 20,000) is drawn
//! with one flat colour per triangle (its normal as a colour, lit from the eye). Each
//! frame the cursor position becomes a ray of the same camera the renderer draws
//! with (`Camera::ray_at`), raypick traces it — on the GPU through a `GpuContext`
//! made from the renderer's `wgpu::Device` and `Queue` (`GpuContext::from_device`),
//! or on the CPU with `--backend cpu` — and the hit triangle's id goes to the
//! fragment shader in a uniform, which paints that triangle orange. The window
//! title shows the triangle id and `t`, `u`, `v`; every change is also printed.
//! Drag with the left button to orbit, scroll to zoom.
//!
//! For screenshots without a display (e.g. under `xvfb-run`): `--mouse X,Y` fixes
//! the cursor position, `--frames N` exits after N frames, and `--screenshot
//! out.png` draws the last frame once more into a texture and writes it as a PNG.
//! The window uses X11 (Xlib is loaded at run time).

use std::path::PathBuf;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use glam::{Quat, Vec3};
use raypick::camera::{Camera, aspect};
use raypick::gpu::GpuContext;
use raypick::render::Image;
use raypick::{Backend, Hit, Mesh, PickMesh, Picker, TraceOptions, io};
use raypick_testkit::fixtures;
use wgpu::util::DeviceExt;
use winit::application::ApplicationHandler;
use winit::dpi::{PhysicalPosition, PhysicalSize};
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

const SHADER: &str = r"
struct Uniforms {
    view_proj: mat4x4<f32>,
    eye: vec4<f32>,
    picked: vec4<u32>,
}
@group(0) @binding(0) var<uniform> uniforms: Uniforms;

struct Varyings {
    @builtin(position) position: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) @interpolate(flat) normal: vec3<f32>,
    @location(2) @interpolate(flat) id: u32,
}

@vertex
fn vs(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) id: u32,
) -> Varyings {
    let clip = uniforms.view_proj * vec4<f32>(position, 1.0);
    return Varyings(clip, position, normal, id);
}

@fragment
fn fs(in: Varyings) -> @location(0) vec4<f32> {
    let to_eye = normalize(uniforms.eye.xyz - in.world);
    let light = 0.35 + 0.65 * abs(dot(in.normal, to_eye));
    var colour = (vec3<f32>(0.5) + 0.5 * in.normal) * light;
    if in.id == uniforms.picked.x {
        colour = vec3<f32>(1.0, 0.45, 0.05) * (0.6 + 0.4 * light);
    }
    return vec4<f32>(colour, 1.0);
}
";

/// One vertex of the non-indexed draw: every triangle has its own three vertices
/// carrying its flat normal and its id (the id raypick reports for it).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Vertex {
    position: [f32; 3],
    normal: [f32; 3],
    id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Uniforms {
    view_proj: [f32; 16],
    eye: [f32; 4],
    /// `x`: the picked triangle id, or `u32::MAX` (no triangle has that id).
    picked: [u32; 4],
}

/// Command-line options.
struct Options {
    mesh: Option<String>,
    triangles: usize,
    backend: Backend,
    size: (u32, u32),
    mouse: Option<(f64, f64)>,
    frames: Option<u64>,
    screenshot: Option<PathBuf>,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        mesh: None,
        triangles: 20_000,
        backend: Backend::Gpu,
        size: (800, 600),
        mouse: None,
        frames: None,
        screenshot: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        let pair = |s: &str, sep: char| -> Option<(String, String)> {
            let (a, b) = s.split_once(sep)?;
            Some((a.trim().to_string(), b.trim().to_string()))
        };
        match arg.as_str() {
            "--backend" => {
                options.backend = match value("--backend")?.as_str() {
                    "gpu" => Backend::Gpu,
                    "cpu" => Backend::Cpu,
                    other => return Err(format!("--backend {other}: expected gpu or cpu")),
                }
            }
            "--triangles" => {
                let v = value("--triangles")?;
                options.triangles = v
                    .parse()
                    .ok()
                    .filter(|&n| (1..=10_000_000).contains(&n))
                    .ok_or(format!("--triangles {v}: expected 1 to 10000000"))?;
            }
            "--size" => {
                let v = value("--size")?;
                options.size = pair(&v, 'x')
                    .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
                    .filter(|&(w, h)| (1..=8192).contains(&w) && (1..=8192).contains(&h))
                    .ok_or(format!("--size {v}: expected WxH"))?;
            }
            "--mouse" => {
                let v = value("--mouse")?;
                options.mouse = Some(
                    pair(&v, ',')
                        .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
                        .ok_or(format!("--mouse {v}: expected X,Y in pixels"))?,
                );
            }
            "--frames" => {
                let v = value("--frames")?;
                options.frames = Some(
                    v.parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--frames {v}: expected a positive count"))?,
                );
            }
            "--screenshot" => options.screenshot = Some(value("--screenshot")?.into()),
            path if !path.starts_with("--") && options.mesh.is_none() => {
                options.mesh = Some(path.to_string())
            }
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(options)
}

fn main() {
    let result = parse_options().and_then(|options| {
        let mesh = match &options.mesh {
            Some(path) => io::load_mesh(path).map_err(|e| e.to_string())?,
            None => fixtures::builtin_scene(options.triangles),
        };
        let event_loop = EventLoop::new().map_err(|e| format!("no window system: {e}"))?;
        let mut app = App {
            options,
            mesh,
            state: None,
            error: None,
        };
        event_loop
            .run_app(&mut app)
            .map_err(|e| format!("event loop: {e}"))?;
        app.error.map_or(Ok(()), Err)
    });
    if let Err(message) = result {
        eprintln!("interactive_pick: {message}");
        std::process::exit(1);
    }
}

struct App {
    options: Options,
    mesh: Mesh,
    state: Option<State>,
    error: Option<String>,
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_some() {
            return;
        }
        match pollster::block_on(State::new(event_loop, &self.options, &self.mesh)) {
            Ok(state) => {
                state.window.request_redraw();
                self.state = Some(state);
            }
            Err(e) => {
                self.error = Some(e);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let Some(state) = self.state.as_mut() else {
            return;
        };
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => state.resize(size),
            WindowEvent::CursorMoved { position, .. } => state.cursor_moved(position),
            WindowEvent::MouseInput {
                state: pressed,
                button: MouseButton::Left,
                ..
            } => state.dragging = pressed == ElementState::Pressed,
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                state.zoom(0.9f32.powf(lines));
            }
            WindowEvent::RedrawRequested => {
                if let Err(e) = state.frame(&self.mesh, &self.options) {
                    self.error = Some(e);
                    event_loop.exit();
                    return;
                }
                let done = self.options.frames.is_some_and(|n| state.frames >= n);
                if done {
                    event_loop.exit();
                } else if self.options.frames.is_some() {
                    state.window.request_redraw();
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        event_loop.set_control_flow(ControlFlow::Wait);
    }
}

/// The window, the renderer and the picker.
struct State {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    device: wgpu::Device,
    queue: wgpu::Queue,
    module: wgpu::ShaderModule,
    pipeline_layout: wgpu::PipelineLayout,
    pipeline: wgpu::RenderPipeline,
    bind_group: wgpu::BindGroup,
    uniforms: wgpu::Buffer,
    vertices: wgpu::Buffer,
    vertex_count: u32,
    depth: wgpu::TextureView,
    picker: Picker,
    prepared: PickMesh,
    camera: Camera,
    /// Centre and radius of the mesh's bounding sphere (near and far planes).
    sphere: (Vec3, f32),
    cursor: Option<PhysicalPosition<f64>>,
    /// `--mouse` was given: the real pointer is ignored.
    fixed_cursor: bool,
    dragging: bool,
    /// The last pick shown (none before the first frame).
    picked: Option<Hit>,
    frames: u64,
}

impl State {
    async fn new(
        event_loop: &ActiveEventLoop,
        options: &Options,
        mesh: &Mesh,
    ) -> Result<Self, String> {
        let (width, height) = options.size;
        let window = Arc::new(
            event_loop
                .create_window(
                    Window::default_attributes()
                        .with_title("raypick")
                        .with_inner_size(PhysicalSize::new(width, height))
                        .with_resizable(true),
                )
                .map_err(|e| format!("cannot open a window: {e}"))?,
        );
        let instance =
            wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| format!("cannot draw into the window: {e}"))?;
        let adapter = instance
            .request_adapter(&wgpu::RequestAdapterOptions {
                compatible_surface: Some(&surface),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("no GPU adapter for the window: {e}"))?;
        let (device, queue) = adapter
            .request_device(&wgpu::DeviceDescriptor {
                label: Some("interactive_pick"),
                required_limits: adapter.limits(),
                ..Default::default()
            })
            .await
            .map_err(|e| format!("cannot open the device: {e}"))?;
        let info = adapter.get_info();
        println!("rendering on {} ({:?})", info.name, info.backend);

        // The picker: on the renderer's own device, or the CPU.
        let picker = match options.backend {
            Backend::Cpu => Picker::new(Backend::Cpu),
            _ => {
                GpuContext::from_device(device.clone(), queue.clone(), &info).map(Picker::from_gpu)
            }
        }
        .map_err(|e| e.to_string())?;
        let prepared = picker.upload(mesh).map_err(|e| e.to_string())?;
        println!(
            "{} triangles, picking on the {}",
            mesh.triangle_count(),
            picker.device_name()
        );

        let size = window.inner_size();
        let mut config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or("the surface does not work with this adapter")?;
        config.present_mode = wgpu::PresentMode::AutoVsync;
        surface.configure(&device, &config);

        let (lo, hi) = mesh.bounds().ok_or("the mesh has no finite triangles")?;
        let camera = Camera::framing(
            lo,
            hi,
            Vec3::new(0.2, 1.0, 1.0),
            50f32.to_radians(),
            aspect(config.width, config.height),
        );
        let sphere = (0.5 * (lo + hi), (0.5 * (hi - lo).length()).max(1e-6));

        let vertices: Vec<Vertex> = mesh
            .triangles()
            .enumerate()
            .flat_map(|(id, [a, b, c])| {
                let normal = (b - a).cross(c - a).normalize_or_zero().to_array();
                [a, b, c].map(|p| Vertex {
                    position: p.to_array(),
                    normal,
                    id: id as u32,
                })
            })
            .collect();
        let vertex_buffer = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("vertices"),
            contents: bytemuck::cast_slice(&vertices),
            usage: wgpu::BufferUsages::VERTEX,
        });
        let uniforms = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("uniforms"),
            size: std::mem::size_of::<Uniforms>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: None,
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::VERTEX_FRAGMENT,
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
                resource: uniforms.as_entire_binding(),
            }],
        });
        let pipeline_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: None,
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("flat shading"),
            source: wgpu::ShaderSource::Wgsl(SHADER.into()),
        });
        let pipeline = create_pipeline(&device, &pipeline_layout, &module, config.format);
        let depth = depth_view(&device, config.width, config.height);
        Ok(Self {
            window,
            surface,
            config,
            device,
            queue,
            module,
            pipeline_layout,
            pipeline,
            bind_group,
            uniforms,
            vertices: vertex_buffer,
            vertex_count: vertices.len() as u32,
            depth,
            picker,
            prepared,
            camera,
            sphere,
            cursor: options.mouse.map(|(x, y)| PhysicalPosition::new(x, y)),
            fixed_cursor: options.mouse.is_some(),
            dragging: false,
            picked: None,
            frames: 0,
        })
    }

    fn resize(&mut self, size: PhysicalSize<u32>) {
        if size.width == 0 || size.height == 0 {
            return;
        }
        self.config.width = size.width;
        self.config.height = size.height;
        self.surface.configure(&self.device, &self.config);
        self.depth = depth_view(&self.device, size.width, size.height);
        self.window.request_redraw();
    }

    fn cursor_moved(&mut self, position: PhysicalPosition<f64>) {
        if self.fixed_cursor {
            return;
        }
        if let Some(old) = self.cursor.filter(|_| self.dragging) {
            let (dx, dy) = ((position.x - old.x) as f32, (position.y - old.y) as f32);
            let [_, right, _] = self.camera.basis();
            let turn = Quat::from_axis_angle(self.camera.up.normalize(), -0.01 * dx)
                * Quat::from_axis_angle(right, -0.01 * dy);
            let eye = self.camera.target + turn * (self.camera.eye - self.camera.target);
            let moved = Camera { eye, ..self.camera };
            if moved.check().is_ok() {
                self.camera = moved;
            }
        }
        self.cursor = Some(position);
        self.window.request_redraw();
    }

    fn zoom(&mut self, factor: f32) {
        let c = &mut self.camera;
        c.eye = c.target + factor * (c.eye - c.target);
        self.window.request_redraw();
    }

    /// Near and far planes that enclose the mesh's bounding sphere.
    fn depth_range(&self) -> (f32, f32) {
        let (centre, radius) = self.sphere;
        let distance = self.camera.eye.distance(centre);
        ((distance - radius).max(1e-3 * radius), distance + radius)
    }

    /// Picks under the cursor, draws, presents; the last frame of `--frames` is
    /// also written to `--screenshot`.
    fn frame(&mut self, mesh: &Mesh, options: &Options) -> Result<(), String> {
        let (width, height) = (self.config.width, self.config.height);
        let hit = match self.cursor {
            Some(p) => {
                let ray = self.camera.ray_at(p.x as f32, p.y as f32, width, height);
                self.picker
                    .trace(&self.prepared, &[ray], &TraceOptions::default())
                    .map_err(|e| format!("pick failed: {e}"))?[0]
            }
            None => Hit::MISS,
        };
        if self.picked.map(|h| h.prim) != Some(hit.prim) {
            let text = match (hit.is_hit(), raypick::screen::hit_point(mesh, &hit)) {
                (true, Some(p)) => format!(
                    "triangle {} (t {:.4}, u {:.3}, v {:.3}) at ({:.3}, {:.3}, {:.3})",
                    hit.prim, hit.t, hit.u, hit.v, p.x, p.y, p.z
                ),
                _ => "no triangle under the cursor".to_string(),
            };
            println!("{text}");
            self.window.set_title(&format!("raypick: {text}"));
        }
        self.picked = Some(hit);

        let (near, far) = self.depth_range();
        let uniforms = Uniforms {
            view_proj: self
                .camera
                .view_projection(aspect(width, height), near, far)
                .to_cols_array(),
            eye: self.camera.eye.extend(1.0).to_array(),
            picked: [hit.prim, 0, 0, 0],
        };
        self.queue
            .write_buffer(&self.uniforms, 0, bytemuck::bytes_of(&uniforms));

        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(frame)
            | wgpu::CurrentSurfaceTexture::Suboptimal(frame) => frame,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                self.surface.configure(&self.device, &self.config);
                self.window.request_redraw();
                return Ok(());
            }
            _ => {
                self.window.request_redraw();
                return Ok(());
            }
        };
        let view = frame.texture.create_view(&Default::default());
        let mut encoder = self.device.create_command_encoder(&Default::default());
        self.draw(&mut encoder, &view, &self.pipeline);
        self.queue.submit([encoder.finish()]);
        self.window.pre_present_notify();
        self.queue.present(frame);
        self.frames += 1;

        if let Some(path) = &options.screenshot
            && options.frames == Some(self.frames)
        {
            let image = self.screenshot()?;
            write_png(path, &image).map_err(|e| format!("{}: {e}", path.display()))?;
            println!(
                "wrote {} ({}x{})",
                path.display(),
                image.width,
                image.height
            );
        }
        Ok(())
    }

    fn draw(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        pipeline: &wgpu::RenderPipeline,
    ) {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("mesh"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color {
                        r: 0.012,
                        g: 0.014,
                        b: 0.018,
                        a: 1.0,
                    }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: Some(wgpu::RenderPassDepthStencilAttachment {
                view: &self.depth,
                depth_ops: Some(wgpu::Operations {
                    load: wgpu::LoadOp::Clear(1.0),
                    store: wgpu::StoreOp::Discard,
                }),
                stencil_ops: None,
            }),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_vertex_buffer(0, self.vertices.slice(..));
        pass.draw(0..self.vertex_count, 0..1);
    }

    /// Draws the frame again into an RGBA8 texture (sRGB when the window is) and
    /// reads it back.
    fn screenshot(&self) -> Result<Image, String> {
        let (width, height) = (self.config.width, self.config.height);
        let format = if self.config.format.is_srgb() {
            wgpu::TextureFormat::Rgba8UnormSrgb
        } else {
            wgpu::TextureFormat::Rgba8Unorm
        };
        let pipeline = create_pipeline(&self.device, &self.pipeline_layout, &self.module, format);
        let texture = self.device.create_texture(&wgpu::TextureDescriptor {
            label: Some("screenshot"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            view_formats: &[],
        });
        let row = 4 * width;
        let padded_row =
            row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("screenshot readback"),
            size: (padded_row * height) as u64,
            usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&Default::default());
        self.draw(
            &mut encoder,
            &texture.create_view(&Default::default()),
            &pipeline,
        );
        encoder.copy_texture_to_buffer(
            texture.as_image_copy(),
            wgpu::TexelCopyBufferInfo {
                buffer: &buffer,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(padded_row),
                    rows_per_image: None,
                },
            },
            wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
        );
        self.queue.submit([encoder.finish()]);
        let slice = buffer.slice(..);
        let (sender, receiver) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = sender.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| e.to_string())?;
        receiver
            .recv()
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let mapped = slice.get_mapped_range().map_err(|e| e.to_string())?;
        let pixels = mapped
            .chunks_exact(padded_row as usize)
            .flat_map(|r| &r[..row as usize])
            .copied()
            .collect();
        Ok(Image {
            width,
            height,
            pixels,
        })
    }
}

fn create_pipeline(
    device: &wgpu::Device,
    layout: &wgpu::PipelineLayout,
    module: &wgpu::ShaderModule,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let attributes = wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3, 2 => Uint32];
    device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("flat shading"),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some("vs"),
            compilation_options: Default::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &attributes,
            })],
        },
        primitive: wgpu::PrimitiveState::default(), // both faces, as picking sees them
        depth_stencil: Some(wgpu::DepthStencilState {
            format: DEPTH_FORMAT,
            depth_write_enabled: Some(true),
            depth_compare: Some(wgpu::CompareFunction::Less),
            stencil: Default::default(),
            bias: Default::default(),
        }),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some("fs"),
            compilation_options: Default::default(),
            targets: &[Some(format.into())],
        }),
        multiview_mask: None,
        cache: None,
    })
}

fn depth_view(device: &wgpu::Device, width: u32, height: u32) -> wgpu::TextureView {
    device
        .create_texture(&wgpu::TextureDescriptor {
            label: Some("depth"),
            size: wgpu::Extent3d {
                width,
                height,
                depth_or_array_layers: 1,
            },
            mip_level_count: 1,
            sample_count: 1,
            dimension: wgpu::TextureDimension::D2,
            format: DEPTH_FORMAT,
            usage: wgpu::TextureUsages::RENDER_ATTACHMENT,
            view_formats: &[],
        })
        .create_view(&Default::default())
}

/// Writes an RGBA image as a PNG file.
fn write_png(path: &std::path::Path, image: &Image) -> Result<(), Box<dyn std::error::Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, image.width, image.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(&image.pixels)?;
    Ok(())
}
