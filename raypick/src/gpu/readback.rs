//! Reading GPU buffers back: `map_async` completes through a futures-intrusive
//! oneshot channel, awaited either blocking (the device is polled until the GPU is
//! done) or cooperatively (the device is polled without blocking each time the future
//! is polled).

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use crate::error::{Error, Result};

/// How a readback waits for the GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Block the thread in `Device::poll` until the work is done.
    Block,
    /// Never block: poll the device once per future poll and wake again.
    Yield,
}

/// Maps `slice` for reading and resolves when it is mapped.
pub(crate) async fn map_read(
    device: &wgpu::Device,
    slice: wgpu::BufferSlice<'_>,
    wait: Wait,
) -> Result<()> {
    let (sender, receiver) = futures_intrusive::channel::shared::oneshot_channel();
    slice.map_async(wgpu::MapMode::Read, move |result| {
        let _ = sender.send(result);
    });
    if wait == Wait::Block {
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(Error::Poll)?;
    }
    let received = poll_until_ready(device, receiver.receive()).await;
    match received {
        Some(Ok(())) => Ok(()),
        Some(Err(e)) => Err(Error::Readback(Box::new(e))),
        // wgpu drops the callback unanswered only when the device goes away.
        None => Err(Error::DeviceLost(
            "the buffer mapping was dropped unanswered".into(),
        )),
    }
}

/// Maps the first `bytes` of `staging` for reading and gives `read` its contents
/// as `T`s, then unmaps it.
pub(crate) async fn read_mapped<T: bytemuck::Pod, R>(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    bytes: u64,
    wait: Wait,
    read: impl FnOnce(&[T]) -> R,
) -> Result<R> {
    let slice = staging.slice(..bytes);
    map_read(device, slice, wait).await?;
    let out = {
        let view = slice
            .get_mapped_range()
            .map_err(|e| Error::Readback(Box::new(e)))?;
        read(bytemuck::cast_slice(&view))
    };
    staging.unmap();
    Ok(out)
}

/// Drives `future`, polling the device (without blocking) whenever it is pending.
async fn poll_until_ready<F: Future>(device: &wgpu::Device, future: F) -> F::Output {
    let mut future = pin!(future);
    poll_fn(|cx| {
        if let Poll::Ready(out) = future.as_mut().poll(cx) {
            return Poll::Ready(out);
        }
        let _ = device.poll(wgpu::PollType::Poll);
        match future.as_mut().poll(cx) {
            Poll::Ready(out) => Poll::Ready(out),
            Poll::Pending => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    })
    .await
}
