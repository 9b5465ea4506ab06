//! The step's radix sorter: lampshade's key-value sort, made for the adapter where its fast
//! kernels apply, recorded as one observed command.

use super::observe::{Observed, observe};
use crate::error::Error;

/// A radix sorter of key-value records for sorts of at most `capacity` records: specialised
/// for `adapter` where known (lampshade's 8-bit kernel on NVIDIA Vulkan with subgroups, its
/// 4-bit one on some others), else its portable 2-bit kernel. The 8-bit kernel refuses sorts
/// above [`eight_bit_limit`] records (`RadixElementCountLimitExceeded`), so a capacity above
/// it takes the portable kernel, which has no such limit.
pub(super) fn new_sorter(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    adapter: Option<&wgpu::AdapterInfo>,
    capacity: u64,
) -> lampshade::KeyValueSorter {
    match adapter {
        Some(adapter) if capacity <= eight_bit_limit(device) => {
            lampshade::KeyValueSorter::new_for_adapter(device, queue, adapter)
        }
        _ => lampshade::KeyValueSorter::new(device, queue),
    }
}

/// The most records lampshade 0.13's 8-bit sort takes on `device`: 1,792 a workgroup of its
/// one-sweep tiles times the workgroups of one dimension, at most 2^28 - 1 (its packed count;
/// `element_count_limit` in lampshade:src/sort/eight_bit.rs). 117,438,720 on a device of 65,535
/// workgroups a dimension.
pub(super) fn eight_bit_limit(device: &wgpu::Device) -> u64 {
    (u64::from(device.limits().max_compute_workgroups_per_dimension) * 1792).min(0x0fff_ffff)
}

/// Records lampshade's stable sort of the key-value records of `input` into `output`, as
/// many as the `u32` in `count` says (at most `capacity`), keys of `key_bits` bits; observed
/// as one command, since its own dispatches are lampshade's.
pub(super) fn record_sort(
    sorter: &mut lampshade::KeyValueSorter,
    encoder: &mut wgpu::CommandEncoder,
    [input, output]: [&wgpu::Buffer; 2],
    count: &wgpu::Buffer,
    capacity: u32,
    key_bits: u32,
) -> Result<(), Error> {
    observe(|| Observed::Sort {
        count: count.clone(),
        capacity,
        key_bits,
    });
    sorter
        .record_sort_counted_with_key_bits(encoder, input, output, count, capacity, key_bits)
        .map_err(|error| Error::Device(format!("radix sort: {error}")))
}

/// The error of a sorter that was handed over and not given back (a failed growth that was
/// not retried): never seen through the public API.
pub(super) fn lost_sorter() -> Error {
    Error::Device("the step's buffers lost their sorter in a failed growth".into())
}
