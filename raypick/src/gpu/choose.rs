//! Which adapter a GPU context opens: hardware GPUs first (discrete, integrated,
//! virtual, unknown), software rasterisers last, and those only when asked for.
//!
//! A software adapter (wgpu device type `Cpu`: Mesa's llvmpipe and lavapipe,
//! SwiftShader, WARP) runs the compute shaders on the CPU cores, several times slower
//! than the CPU backend on the same cores. So [`Backend::Auto`](crate::Backend::Auto)
//! never takes one: it traces on the CPU instead and says why.
//! [`Backend::Gpu`](crate::Backend::Gpu) and [`GpuContext::new`](super::GpuContext::new)
//! take the best adapter there is, software included.

use crate::Accel;
use crate::error::{Error, Result};

/// Which adapters a GPU context may open (see [`GpuOptions::adapters`](super::GpuOptions::adapters)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AdapterKinds {
    /// Hardware GPUs only: discrete, integrated, virtual, or of unknown type.
    /// [`Backend::Auto`](crate::Backend::Auto)'s default.
    Hardware,
    /// Any adapter, software rasterisers included (ranked after every hardware GPU).
    /// The default of [`Backend::Gpu`](crate::Backend::Gpu) and
    /// [`GpuContext::new`](super::GpuContext::new).
    #[default]
    Any,
}

/// Rank of an adapter for opening (lower first), or `None` when `kinds` leaves it out.
///
/// Device type first: the discrete GPU before the integrated one (the other way
/// round with [`wgpu::PowerPreference::LowPower`]), then virtual GPUs, adapters of
/// unknown type, and software ones. At equal type an adapter on a native API
/// (Vulkan, Metal, DX12) comes before one on OpenGL, which lacks features raypick can
/// use. Equal ranks keep wgpu's order.
pub(crate) fn rank(
    device_type: wgpu::DeviceType,
    api: wgpu::Backend,
    power: wgpu::PowerPreference,
    kinds: AdapterKinds,
) -> Option<(u8, u8)> {
    use wgpu::DeviceType::*;
    let low_power = power == wgpu::PowerPreference::LowPower;
    let kind = match device_type {
        DiscreteGpu => u8::from(low_power),
        IntegratedGpu => u8::from(!low_power),
        VirtualGpu => 2,
        Other => 3,
        Cpu => match kinds {
            AdapterKinds::Any => 4,
            AdapterKinds::Hardware => return None,
        },
    };
    Some((kind, u8::from(api == wgpu::Backend::Gl)))
}

/// A short phrase for an adapter's device type, for the reasons given to users.
pub(crate) fn describe(device_type: wgpu::DeviceType) -> &'static str {
    match device_type {
        wgpu::DeviceType::DiscreteGpu => "a discrete GPU",
        wgpu::DeviceType::IntegratedGpu => "an integrated GPU",
        wgpu::DeviceType::VirtualGpu => "a virtual GPU",
        wgpu::DeviceType::Other => "a GPU of unknown type",
        wgpu::DeviceType::Cpu => "a software adapter (it runs on the CPU)",
    }
}

/// `name (API)` of an adapter, as users see it in reasons.
pub(crate) fn label(info: &wgpu::AdapterInfo) -> String {
    format!("{} ({:?})", info.name, info.backend)
}

/// The adapter a context opens among `adapters`, in wgpu's order, and why.
///
/// Errors: [`Error::OnlySoftwareAdapters`] when `kinds` is
/// [`AdapterKinds::Hardware`] and every adapter is a software one; `Ok(None)` when
/// there is no adapter at all (the caller asks wgpu, whose error says why).
pub(crate) fn choose(
    adapters: Vec<wgpu::Adapter>,
    power: wgpu::PowerPreference,
    kinds: AdapterKinds,
) -> Result<Option<(wgpu::Adapter, String)>> {
    let count = adapters.len();
    let infos: Vec<wgpu::AdapterInfo> = adapters.iter().map(wgpu::Adapter::get_info).collect();
    let best = infos
        .iter()
        .enumerate()
        .filter_map(|(i, a)| rank(a.device_type, a.backend, power, kinds).map(|r| (r, i)))
        .min();
    match best {
        Some((_, i)) => {
            let info = &infos[i];
            let why = format!(
                "{} is {}, first of the {count} adapter{} found in raypick's order \
                 (discrete, integrated, virtual GPU, {})",
                label(info),
                describe(info.device_type),
                if count == 1 { "" } else { "s" },
                match kinds {
                    AdapterKinds::Hardware => "never a software adapter",
                    AdapterKinds::Any => "then software adapters",
                },
            );
            let adapter = adapters.into_iter().nth(i).expect("index of an adapter");
            Ok(Some((adapter, why)))
        }
        None if count > 0 => Err(Error::OnlySoftwareAdapters {
            adapters: infos.iter().map(label).collect(),
        }),
        None => Ok(None),
    }
}

/// The acceleration structure a mesh gets on a GPU when none is named
/// ([`GpuContext::default_accel`](super::GpuContext::default_accel)), and why.
///
/// Hardware ray queries on a hardware GPU: there the driver's structure and
/// traversal run on the card's ray-tracing units. A software adapter's ray queries
/// are the driver's traversal in CPU code, slower than raypick's own BVH on the same
/// adapter, so it keeps the BVH, as does every device without ray queries.
pub(crate) fn default_accel(
    device_type: wgpu::DeviceType,
    ray_queries: bool,
) -> (Accel, &'static str) {
    match (ray_queries, device_type) {
        (true, wgpu::DeviceType::Cpu) => (
            Accel::Bvh,
            "the adapter's ray queries run in software, slower than raypick's BVH",
        ),
        (true, _) => (
            Accel::RayQuery,
            "the GPU has hardware ray queries: the driver builds and traverses the structure",
        ),
        (false, _) => (Accel::Bvh, "the device has no hardware ray queries"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wgpu::{Backend as Api, DeviceType::*, PowerPreference as Power};

    /// The order `choose` would take these adapters in (indices), and those left out.
    fn order(
        adapters: &[(wgpu::DeviceType, Api)],
        power: Power,
        kinds: AdapterKinds,
    ) -> Vec<usize> {
        let mut ranked: Vec<_> = adapters
            .iter()
            .enumerate()
            .filter_map(|(i, &(t, api))| rank(t, api, power, kinds).map(|r| (r, i)))
            .collect();
        ranked.sort();
        ranked.into_iter().map(|(_, i)| i).collect()
    }

    #[test]
    fn hardware_before_software_and_native_apis_before_gl() {
        let machine = [
            (Cpu, Api::Vulkan),
            (Cpu, Api::Gl),
            (IntegratedGpu, Api::Gl),
            (VirtualGpu, Api::Vulkan),
            (IntegratedGpu, Api::Vulkan),
            (Other, Api::Vulkan),
            (DiscreteGpu, Api::Gl),
            (DiscreteGpu, Api::Vulkan),
        ];
        let none = Power::None;
        assert_eq!(
            order(&machine, none, AdapterKinds::Any),
            [7, 6, 4, 2, 3, 5, 0, 1]
        );
        assert_eq!(
            order(&machine, Power::HighPerformance, AdapterKinds::Any),
            [7, 6, 4, 2, 3, 5, 0, 1]
        );
        assert_eq!(
            order(&machine, Power::LowPower, AdapterKinds::Any),
            [4, 2, 7, 6, 3, 5, 0, 1]
        );
        assert_eq!(
            order(&machine, none, AdapterKinds::Hardware),
            [7, 6, 4, 2, 3, 5]
        );
    }

    #[test]
    fn ray_queries_by_default_on_hardware_gpus_only() {
        for hardware in [DiscreteGpu, IntegratedGpu, VirtualGpu, Other] {
            assert_eq!(default_accel(hardware, true).0, Accel::RayQuery);
            assert_eq!(default_accel(hardware, false).0, Accel::Bvh);
        }
        assert_eq!(default_accel(Cpu, true).0, Accel::Bvh);
        assert_eq!(default_accel(Cpu, false).0, Accel::Bvh);
    }

    #[test]
    fn software_only_when_asked() {
        let lavapipe_and_llvmpipe = [(Cpu, Api::Vulkan), (Cpu, Api::Gl)];
        assert_eq!(
            order(&lavapipe_and_llvmpipe, Power::None, AdapterKinds::Any),
            [0, 1]
        );
        assert!(order(&lavapipe_and_llvmpipe, Power::None, AdapterKinds::Hardware).is_empty());
        let err = choose(Vec::new(), Power::None, AdapterKinds::Hardware).unwrap();
        assert!(err.is_none(), "no adapter at all is left to wgpu's error");
    }
}
