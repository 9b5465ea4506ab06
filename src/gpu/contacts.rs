//! The outputs stage: `shaders/contacts.wgsl` recorded into the caller's command encoder,
//! from the swept candidates to each body's earliest contact (no sort: order-preserving keys
//! and `atomicMax`) and, when asked, every contact in
//! the step's order (compaction and three stable radix sorts). Its f32 twin, one function per
//! entry point, is [`crate::low_level::contacts`](crate::low_level::contacts).

use super::buffers::{BufferSet, COUNTED, PerItem, bytes_per_item, largest_binding, most_items};
use super::kernel::{
    Access, Bindings, Kernel, Shader, Workgroups, clear, compile_checked, most_storage_buffers,
};
use super::sort::{lost_sorter, new_sorter, record_sort};
use crate::error::{Counted, Error};
use crate::layout::{ContactRecord, EarliestRecord, KeyValue, SweepDispatch, bytes_of};

/// The WGSL source of the step's outputs: `shaders/shared.wgsl` followed by
/// `shaders/contacts.wgsl`.
pub const CONTACTS_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/contacts.wgsl")
);

/// The ordered contacts' buffers of one record a contact, as
/// [`ContactStage::create_buffers`] makes them (when asked).
const ORDERED_PER_CONTACT: [PerItem; 4] = [
    PerItem::of::<ContactRecord>("step contacts", wgpu::BufferUsages::STORAGE),
    PerItem::of::<KeyValue>("step contact sort in", wgpu::BufferUsages::STORAGE),
    PerItem::of::<KeyValue>("step contact sort out", wgpu::BufferUsages::STORAGE),
    PerItem::of::<ContactRecord>("step ordered contacts", COUNTED),
];

/// Bytes per contact of the ordered contacts (when asked): the contact (64) in the order of
/// discovery and in the step's order, and two sort records (16); the sum of the buffers the
/// stage makes a contact.
pub const ORDERED_BYTES_PER_CONTACT: u64 = bytes_per_item(&ORDERED_PER_CONTACT);

// The shader's bindings.
const PARAMS: u32 = 0;
const BODIES: u32 = 1;
const PAIRS: u32 = 2;
const IMPACTS: u32 = 3;
const SWEEP_DISPATCH: u32 = 4;
const CONTACT_COUNT: u32 = 5;
const CONTACTS: u32 = 6;
const CONTACT_DISPATCH: u32 = 7;
const SORT_IN: u32 = 8;
const SORT_OUT: u32 = 9;
const ORDERED: u32 = 10;
const POSITIONS: u32 = 11;
const CONTACTS_DISPATCHED: u32 = 12;
const EARLIEST_KEYS: u32 = 13;
const HIT_COUNT: u32 = 14;
const EARLIEST: u32 = 15;
const WALL_CONTACTS: u32 = 16;

use Access::{Read, Uniform, Write};
const COMPACT: Bindings = &[
    (PARAMS, Uniform),
    (BODIES, Read),
    (PAIRS, Read),
    (IMPACTS, Read),
    (SWEEP_DISPATCH, Read),
    (CONTACT_COUNT, Write),
    (CONTACTS, Write),
];
const PREPARE_CONTACTS: Bindings = &[
    (PARAMS, Uniform),
    (CONTACT_COUNT, Write),
    (CONTACT_DISPATCH, Write),
];
const KEY_BY_SECOND: Bindings = &[
    (CONTACTS_DISPATCHED, Read),
    (CONTACTS, Write),
    (SORT_IN, Write),
];
const KEY_BY_LATER: Bindings = &[
    (CONTACTS_DISPATCHED, Read),
    (CONTACTS, Write),
    (SORT_IN, Write),
    (SORT_OUT, Read),
];
const ORDER_CONTACTS: Bindings = &[
    (CONTACTS_DISPATCHED, Read),
    (CONTACTS, Write),
    (SORT_OUT, Read),
    (ORDERED, Write),
    (POSITIONS, Write),
];
const EARLIEST_TIMES: Bindings = &[
    (PAIRS, Read),
    (IMPACTS, Read),
    (SWEEP_DISPATCH, Read),
    (EARLIEST_KEYS, Write),
    (HIT_COUNT, Write),
];
const EARLIEST_PARTNERS: Bindings = &[
    (PAIRS, Read),
    (IMPACTS, Read),
    (SWEEP_DISPATCH, Read),
    (EARLIEST_KEYS, Write),
];
const EARLIEST_RECORDS: Bindings = &[
    (PARAMS, Uniform),
    (BODIES, Read),
    (PAIRS, Read),
    (IMPACTS, Read),
    (SWEEP_DISPATCH, Read),
    (EARLIEST_KEYS, Write),
    (EARLIEST, Write),
];
const EARLIEST_WALLS: Bindings = &[(PARAMS, Uniform), (EARLIEST, Write), (WALL_CONTACTS, Read)];

/// contacts.wgsl's entry points as the stage builds them.
pub(super) const CONTACTS_SHADER: Shader = Shader {
    file: "contacts.wgsl",
    source: CONTACTS_WGSL,
    entry_points: &[
        ("compact", COMPACT),
        ("prepare_contacts", PREPARE_CONTACTS),
        ("key_by_second", KEY_BY_SECOND),
        ("key_by_first", KEY_BY_LATER),
        ("key_by_time", KEY_BY_LATER),
        ("order_contacts", ORDER_CONTACTS),
        ("earliest_times", EARLIEST_TIMES),
        ("earliest_partners", EARLIEST_PARTNERS),
        ("earliest_records", EARLIEST_RECORDS),
        ("earliest_walls", EARLIEST_WALLS),
    ],
};

/// The earliest contacts' buffers of a record a body, as [`ContactStage::create_buffers`]
/// makes them.
const EARLIEST_PER_BODY: [PerItem; 2] = [
    PerItem::of::<[u32; 2]>("step earliest keys", COUNTED),
    PerItem::of::<EarliestRecord>("step earliest", COUNTED),
];

/// Bytes per body of the earliest contacts: the two keys (8) and the record (32), the sum of
/// the buffers the stage makes a body.
pub const EARLIEST_BYTES_PER_BODY: u64 = bytes_per_item(&EARLIEST_PER_BODY);

/// The ordered contacts' buffer of a record a body, as [`ContactStage::create_buffers`] makes
/// it: each body's earliest contact's position in the order.
const ORDERED_PER_BODY: [PerItem; 1] = [PerItem::of::<u32>("step earliest positions", COUNTED)];

/// Bytes per body of the ordered contacts (4): those of `ORDERED_PER_BODY`.
pub(crate) const ORDERED_BYTES_PER_BODY: u64 = bytes_per_item(&ORDERED_PER_BODY);

/// The outputs of the GPU step as a stage that records into the caller's encoder: from the
/// swept candidates (the broad phase's pairs, the sweep's impact records and its dispatch)
/// to each body's earliest contact without sorting, and the contacts in the step's order
/// when asked. Every entry point of `shaders/contacts.wgsl`, with a bind group layout of the
/// bindings it uses. [`StepStage`](super::StepStage) chains it after the sweep.
///
/// # Buffers
/// It binds the [`ContactInputs`] and makes ([`ContactStage::create_buffers`]) each body's
/// earliest contact ([`EarliestRecord`](crate::low_level::layout::EarliestRecord)s, 32 bytes a body,
/// `STORAGE | COPY_SRC | COPY_DST`, and two key words a body), the hit count (a `u32`), and,
/// with ordered contacts, the [`ContactRecord`]s in order (64 bytes each, `STORAGE |
/// COPY_SRC | COPY_DST`), their count and each body's earliest position in them, with
/// lampshade's sorter.
#[derive(Debug, Clone)]
pub struct ContactStage {
    compact: Kernel,
    prepare_contacts: Kernel,
    key_by_second: Kernel,
    key_by_first: Kernel,
    key_by_time: Kernel,
    order_contacts: Kernel,
    earliest_times: Kernel,
    earliest_partners: Kernel,
    earliest_records: Kernel,
    earliest_walls: Kernel,
    adapter: Option<wgpu::AdapterInfo>,
}

/// The device buffers the outputs read (each with usage `STORAGE`, the parameters
/// `UNIFORM`): the step's parameters ([`StepParams`](crate::low_level::layout::StepParams): the options
/// and the contact capacity), the bodies, the candidate pairs, their
/// [`ImpactRecord`](crate::low_level::layout::ImpactRecord)s and the sweep's
/// [`SweepDispatch`](crate::low_level::layout::SweepDispatch) (its `pair_count` swept candidates, and
/// an indirect dispatch of them).
#[derive(Debug, Clone, Copy)]
pub struct ContactInputs<'a> {
    /// The step's parameters.
    pub params: &'a wgpu::Buffer,
    /// The bodies.
    pub bodies: &'a wgpu::Buffer,
    /// The candidate pairs.
    pub pairs: &'a wgpu::Buffer,
    /// Their impact records.
    pub impacts: &'a wgpu::Buffer,
    /// The sweep's dispatch.
    pub sweep_dispatch: &'a wgpu::Buffer,
}

impl<'a> ContactInputs<'a> {
    /// The input bound at `binding`, one of the five every pass of the stage shares.
    fn get(&self, binding: u32) -> &'a wgpu::Buffer {
        match binding {
            PARAMS => self.params,
            BODIES => self.bodies,
            PAIRS => self.pairs,
            IMPACTS => self.impacts,
            SWEEP_DISPATCH => self.sweep_dispatch,
            _ => unreachable!("binding {binding} is not an input"),
        }
    }
}

/// The buffers of one [`ContactStage`]: each body's earliest contact and the hit count, and
/// the ordered contacts' buffers and sorter when asked.
pub struct ContactBuffers {
    earliest_keys: wgpu::Buffer,
    hit_count: wgpu::Buffer,
    earliest: wgpu::Buffer,
    earliest_groups: [wgpu::BindGroup; 3],
    walls_group: Option<wgpu::BindGroup>,
    pub(super) ordered: Option<OrderedBuffers>,
    body_capacity: u64,
    all: Vec<wgpu::Buffer>,
}

impl std::fmt::Debug for ContactBuffers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContactBuffers")
            .field("body_capacity", &self.body_capacity)
            .field(
                "ordered",
                &self.ordered.as_ref().map(|ordered| ordered.capacity),
            )
            .finish_non_exhaustive()
    }
}

/// The buffers of the ordered contacts.
pub(super) struct OrderedBuffers {
    /// Always present but while [`StepStage::grow`](super::StepStage::grow) hands it over.
    sorter: Option<lampshade::KeyValueSorter>,
    pub(super) capacity: u64,
    pub(super) contact_count: wgpu::Buffer,
    contact_dispatch: wgpu::Buffer,
    contact_sort: [wgpu::Buffer; 2],
    /// The contacts in the step's order.
    pub(super) ordered: wgpu::Buffer,
    /// Per body, the complement of its earliest contact's position in the order (0: none).
    pub(super) positions: wgpu::Buffer,
    compact_group: wgpu::BindGroup,
    prepare_group: wgpu::BindGroup,
    key_by_second_group: wgpu::BindGroup,
    key_by_later_group: wgpu::BindGroup,
    order_group: wgpu::BindGroup,
}

impl ContactStage {
    /// Compiles the outputs on `device`; the ordered contacts' sorter takes lampshade's
    /// portable path ([`ContactStage::for_adapter`] lets it choose the adapter's fast one).
    ///
    /// # Errors
    /// [`Error::DeviceLimit`] below [`StepStage::required_limits`](super::StepStage::required_limits);
    /// [`Error::Device`] when the device rejects a shader or pipeline.
    pub fn new(device: &wgpu::Device) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, None))
    }

    /// As [`ContactStage::new`], with the sorter specialised for `adapter`.
    ///
    /// # Errors
    /// As [`ContactStage::new`].
    pub fn for_adapter(device: &wgpu::Device, adapter: &wgpu::AdapterInfo) -> Result<Self, Error> {
        compile_checked(device, || Self::compile(device, Some(adapter)))
    }

    fn compile(device: &wgpu::Device, adapter: Option<&wgpu::AdapterInfo>) -> Self {
        let module = CONTACTS_SHADER.module(device);
        let kernel = |name| CONTACTS_SHADER.kernel(device, &module, name);
        Self {
            compact: kernel("compact"),
            prepare_contacts: kernel("prepare_contacts"),
            key_by_second: kernel("key_by_second"),
            key_by_first: kernel("key_by_first"),
            key_by_time: kernel("key_by_time"),
            order_contacts: kernel("order_contacts"),
            earliest_times: kernel("earliest_times"),
            earliest_partners: kernel("earliest_partners"),
            earliest_records: kernel("earliest_records"),
            earliest_walls: kernel("earliest_walls"),
            adapter: adapter.cloned(),
        }
    }

    /// The most storage buffers one of its entry points binds.
    pub(super) fn storage_buffers(&self) -> u32 {
        most_storage_buffers(&[
            &self.compact,
            &self.prepare_contacts,
            &self.key_by_second,
            &self.key_by_first,
            &self.key_by_time,
            &self.order_contacts,
            &self.earliest_times,
            &self.earliest_partners,
            &self.earliest_records,
            &self.earliest_walls,
        ])
    }

    /// The outputs' buffers over `inputs` for `body_capacity` bodies, with the ordered
    /// contacts' (and a new sorter) for `contact_capacity` contacts where it is given. The
    /// contact capacity reaches the shaders through the step's parameters (`inputs.params`):
    /// it must be the one they hold.
    ///
    /// # Errors
    /// [`Error::TooManyBodies`] where `body_capacity` is more than one binding of the
    /// per-body buffers holds (or than `u32` indices), [`Error::CapacityExceeded`] where
    /// `contact_capacity` is more than one binding of the per-contact buffers holds;
    /// [`Error::OutOfDeviceMemory`] when the device cannot back the buffers, [`Error::Device`]
    /// when it rejects them.
    pub fn create_buffers(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
        inputs: &ContactInputs<'_>,
        body_capacity: u64,
        contact_capacity: Option<u64>,
    ) -> Result<ContactBuffers, Error> {
        let sorter = contact_capacity.map(|_| self.sorter(device, queue));
        let earliest_bodies = body_capacity;
        self.create_buffers_with(
            device,
            inputs,
            [body_capacity, earliest_bodies],
            contact_capacity,
            sorter,
        )
    }

    /// A new sorter for this stage's adapter. The contacts it sorts never exceed one binding
    /// of contact records (64 bytes each: 67 million in 4 GiB), below lampshade's 8-bit limit.
    pub(super) fn sorter(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> lampshade::KeyValueSorter {
        let contacts = largest_binding(device) / bytes_of::<crate::layout::ContactRecord>(1);
        new_sorter(device, queue, self.adapter.as_ref(), contacts)
    }

    /// [`ContactStage::create_buffers`] with the ordered contacts' `sorter` (that of the
    /// buffers these replace, or a new one); none without ordered contacts. The earliest
    /// passes' buffers hold `earliest_bodies` bodies: the step, whose grid keeps each body's
    /// earliest contact itself, records none of those passes and asks for 1.
    pub(super) fn create_buffers_with(
        &self,
        device: &wgpu::Device,
        inputs: &ContactInputs<'_>,
        [body_capacity, earliest_bodies]: [u64; 2],
        contact_capacity: Option<u64>,
        sorter: Option<lampshade::KeyValueSorter>,
    ) -> Result<ContactBuffers, Error> {
        // Each capacity within one binding of its widest buffer (and `u32` indices), checked
        // before any size is multiplied: a larger one wrapped, and the buffers came out of
        // the minimum size, bound where the shaders read far beyond them.
        let max_bodies =
            most_items(device, &EARLIEST_PER_BODY).min(most_items(device, &ORDERED_PER_BODY));
        let bodies = body_capacity.max(earliest_bodies);
        if bodies > max_bodies {
            return Err(Error::TooManyBodies {
                count: usize::try_from(bodies).unwrap_or(usize::MAX),
                max: max_bodies as usize,
            });
        }
        let max_contacts = most_items(device, &ORDERED_PER_CONTACT);
        if let Some(capacity) = contact_capacity
            && capacity > max_contacts
        {
            return Err(Error::CapacityExceeded {
                what: Counted::Contacts,
                at_least: usize::try_from(capacity).unwrap_or(usize::MAX),
                capacity: max_contacts as usize,
            });
        }
        let mut sorter = sorter;
        use wgpu::BufferUsages as Usage;
        let storage = Usage::STORAGE;
        let counted = COUNTED;
        let mut set = BufferSet::new(device);
        let [earliest_keys, earliest] =
            EARLIEST_PER_BODY.map(|buffer| set.per_item(buffer, earliest_bodies.max(1)));
        let hit_count = set.make("step hit count", bytes_of::<u32>(1), counted);
        let ordered = contact_capacity.map(|capacity| {
            let [contacts, contact_sort_in, contact_sort_out, ordered] =
                ORDERED_PER_CONTACT.map(|buffer| set.per_item(buffer, capacity));
            let contact_count = set.make("step contact count", bytes_of::<u32>(1), counted);
            let contact_dispatch = set.make(
                "step contact dispatch",
                bytes_of::<SweepDispatch>(1),
                storage | Usage::INDIRECT | Usage::COPY_SRC,
            );
            let contact_sort = [contact_sort_in, contact_sort_out];
            let [positions] = ORDERED_PER_BODY.map(|buffer| set.per_item(buffer, body_capacity));
            let group = |kernel: &Kernel| {
                kernel.bind(device, |binding| match binding {
                    PARAMS | BODIES | PAIRS | IMPACTS | SWEEP_DISPATCH => inputs.get(binding),
                    CONTACT_COUNT => &contact_count,
                    CONTACTS => &contacts,
                    CONTACT_DISPATCH | CONTACTS_DISPATCHED => &contact_dispatch,
                    SORT_IN => &contact_sort[0],
                    SORT_OUT => &contact_sort[1],
                    ORDERED => &ordered,
                    POSITIONS => &positions,
                    _ => unreachable!("no binding {binding} among the ordered contacts'"),
                })
            };
            OrderedBuffers {
                sorter: sorter.take(),
                capacity,
                compact_group: group(&self.compact),
                prepare_group: group(&self.prepare_contacts),
                key_by_second_group: group(&self.key_by_second),
                key_by_later_group: group(&self.key_by_first),
                order_group: group(&self.order_contacts),
                contact_count,
                contact_dispatch,
                contact_sort,
                ordered,
                positions,
            }
        });
        let earliest_groups = [
            &self.earliest_times,
            &self.earliest_partners,
            &self.earliest_records,
        ]
        .map(|kernel| {
            kernel.bind(device, |binding| match binding {
                PARAMS | BODIES | PAIRS | IMPACTS | SWEEP_DISPATCH => inputs.get(binding),
                EARLIEST_KEYS => &earliest_keys,
                HIT_COUNT => &hit_count,
                EARLIEST => &earliest,
                _ => unreachable!("no binding {binding} among the earliest passes'"),
            })
        });
        let all = set.finish()?;
        Ok(ContactBuffers {
            earliest_keys,
            hit_count,
            earliest,
            earliest_groups,
            walls_group: None,
            ordered,
            body_capacity,
            all,
        })
    }

    /// Records the ordered contacts of the swept candidates (dispatched from
    /// `sweep_dispatch`): compaction, three stable sorts (by the second body, the first, then
    /// the time) and the order, with each body's earliest position in it. Does nothing where
    /// the buffers were made without ordered contacts.
    ///
    /// # Errors
    /// [`Error::Device`] when the sorter cannot record.
    pub fn record_ordered(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &mut ContactBuffers,
        sweep_dispatch: &wgpu::Buffer,
    ) -> Result<(), Error> {
        let index_bits = u32::BITS - (buffers.body_capacity.max(2) as u32 - 1).leading_zeros();
        let Some(buffers) = &mut buffers.ordered else {
            return Ok(());
        };
        let sorter = buffers.sorter.as_mut().ok_or_else(lost_sorter)?;
        clear(encoder, &buffers.contact_count, 0, None);
        clear(encoder, &buffers.positions, 0, None);
        self.compact.record(
            encoder,
            &buffers.compact_group,
            Workgroups::Indirect(sweep_dispatch),
        );
        self.prepare_contacts
            .record(encoder, &buffers.prepare_group, Workgroups::Direct(1, 1));
        let per_contact = || Workgroups::Indirect(&buffers.contact_dispatch);
        // Times are in [0, 1]: their bits are below 2^30.
        let time_bits = 30;
        let [contact_in, contact_out] = &buffers.contact_sort;
        let capacity = buffers.capacity as u32;
        for (kernel, group, key_bits) in [
            (
                &self.key_by_second,
                &buffers.key_by_second_group,
                index_bits,
            ),
            (&self.key_by_first, &buffers.key_by_later_group, index_bits),
            (&self.key_by_time, &buffers.key_by_later_group, time_bits),
        ] {
            kernel.record(encoder, group, per_contact());
            record_sort(
                sorter,
                encoder,
                [contact_in, contact_out],
                &buffers.contact_count,
                capacity,
                key_bits.max(1),
            )?;
        }
        self.order_contacts
            .record(encoder, &buffers.order_group, per_contact());
        Ok(())
    }

    /// Records each body's earliest contact among the swept candidates (dispatched from
    /// `sweep_dispatch`; no sort: the least time's key, then the lowest partner at it, then
    /// the record both name), counting the hits; then, where walls are bound
    /// ([`ContactStage::bind_walls`]), each body's earliest wall where strictly earlier
    /// (one invocation a body, dispatched from `body_dispatch`, after the walls stage).
    pub fn record_earliest(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &ContactBuffers,
        sweep_dispatch: &wgpu::Buffer,
        body_dispatch: &wgpu::Buffer,
    ) {
        clear(encoder, &buffers.earliest_keys, 0, None);
        clear(encoder, &buffers.hit_count, 0, None);
        clear(encoder, &buffers.earliest, 0, None);
        for (kernel, group) in [
            &self.earliest_times,
            &self.earliest_partners,
            &self.earliest_records,
        ]
        .into_iter()
        .zip(&buffers.earliest_groups)
        {
            kernel.record(encoder, group, Workgroups::Indirect(sweep_dispatch));
        }
        if let Some(group) = &buffers.walls_group {
            self.record_walls_merge(encoder, group, body_dispatch);
        }
    }

    /// Binds the walls stage's output (its [`WallContactRecord`](crate::low_level::layout::WallContactRecord)s,
    /// `STORAGE`) for [`ContactStage::record_earliest`] to merge, or none.
    pub fn bind_walls(
        &self,
        device: &wgpu::Device,
        params: &wgpu::Buffer,
        buffers: &mut ContactBuffers,
        wall_contacts: Option<&wgpu::Buffer>,
    ) {
        buffers.walls_group = wall_contacts.map(|wall_contacts| {
            self.walls_merge(device, params, &buffers.earliest, wall_contacts)
        });
    }

    /// `earliest_walls` bound to the step's parameters (`StepParams`, `UNIFORM`), each body's
    /// earliest contact (`EarliestRecord`s) and the walls stage's output: the merge of walls
    /// into another stage's earliest contacts (the grid's).
    pub(super) fn walls_merge(
        &self,
        device: &wgpu::Device,
        params: &wgpu::Buffer,
        earliest: &wgpu::Buffer,
        wall_contacts: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        self.earliest_walls.bind(device, |binding| match binding {
            PARAMS => params,
            EARLIEST => earliest,
            _ => wall_contacts,
        })
    }

    /// Records `earliest_walls` of a [`ContactStage::walls_merge`] group: one invocation a
    /// body, dispatched from `body_dispatch`, after the walls stage.
    pub(super) fn record_walls_merge(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        group: &wgpu::BindGroup,
        body_dispatch: &wgpu::Buffer,
    ) {
        self.earliest_walls
            .record(encoder, group, Workgroups::Indirect(body_dispatch));
    }
}

impl OrderedBuffers {
    /// The contacts' dispatch, whose `overflowed` word says the contacts outgrew the buffer.
    pub(super) fn dispatch(&self) -> &wgpu::Buffer {
        &self.contact_dispatch
    }
}

impl ContactBuffers {
    /// Each body's earliest contact ([`EarliestRecord`](crate::low_level::layout::EarliestRecord)s,
    /// `STORAGE | COPY_SRC | COPY_DST`).
    #[must_use]
    pub fn earliest(&self) -> &wgpu::Buffer {
        &self.earliest
    }

    /// The swept candidates that hit or overlap (a `u32`, `STORAGE | COPY_SRC | COPY_DST`).
    #[must_use]
    pub fn hit_count(&self) -> &wgpu::Buffer {
        &self.hit_count
    }

    /// The contacts in the step's order ([`ContactRecord`]s, `STORAGE | COPY_SRC |
    /// COPY_DST`), with ordered contacts.
    #[must_use]
    pub fn ordered_contacts(&self) -> Option<&wgpu::Buffer> {
        self.ordered.as_ref().map(|ordered| &ordered.ordered)
    }

    /// Per body, the complement of its earliest contact's position in
    /// [`ContactBuffers::ordered_contacts`] (a `u32`, 0 for none), with ordered contacts.
    #[must_use]
    pub fn earliest_positions(&self) -> Option<&wgpu::Buffer> {
        self.ordered.as_ref().map(|ordered| &ordered.positions)
    }

    /// Bytes of device memory the buffers hold (not the sorter's workspace).
    #[must_use]
    pub fn device_memory_bytes(&self) -> u64 {
        self.all.iter().map(wgpu::Buffer::size).sum()
    }

    /// Hands the ordered contacts' sorter over to the buffers that replace these.
    pub(super) fn take_sorter(&mut self) -> Option<lampshade::KeyValueSorter> {
        self.ordered
            .as_mut()
            .and_then(|ordered| ordered.sorter.take())
    }

    /// Gives the ordered contacts a sorter again where they handed theirs over.
    pub(super) fn restore_sorter(&mut self, sorter: impl FnOnce() -> lampshade::KeyValueSorter) {
        if let Some(ordered) = &mut self.ordered {
            ordered.sorter.get_or_insert_with(sorter);
        }
    }
}
