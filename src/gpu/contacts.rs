//! The outputs stage: `shaders/contacts.wgsl` recorded into the caller's command encoder,
//! from the swept candidates to each body's earliest contact (no sort: order-preserving keys
//! and `atomicMax`), the step's counts and validity word, and, when asked, every contact in
//! the step's order (compaction and three stable radix sorts). Its f32 twin, one function per
//! entry point, is [`crate::cpu::contacts`](mod@crate::cpu::contacts).

use super::buffers::{BufferSet, COUNTED};
use super::kernel::{Access, Bindings, Kernel, clear, module, most_storage_buffers, record_sort};
use super::sweep::Workgroups;
use crate::error::Error;
use crate::layout::{ContactRecord, StepCounts};

/// The WGSL source of the step's outputs: `shaders/shared.wgsl` followed by
/// `shaders/contacts.wgsl`.
pub const CONTACTS_WGSL: &str = concat!(
    include_str!("../../shaders/shared.wgsl"),
    include_str!("../../shaders/contacts.wgsl")
);

const CONTACT_SIZE: u64 = size_of::<ContactRecord>() as u64;
pub(super) const COUNTS_SIZE: u64 = size_of::<StepCounts>() as u64;

/// Bytes per contact of the ordered contacts (when asked): the contact (64) in the order of
/// discovery and in the step's order, and two sort records (16).
pub const ORDERED_BYTES_PER_CONTACT: u64 = 64 + 64 + 16;

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
const COUNTS: u32 = 30;

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
const FINISH_STEP: Bindings = &[(PARAMS, Uniform), (COUNTS, Write)];
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

/// Bytes per body of the earliest contacts: the two keys (8) and the record (32).
pub const EARLIEST_BYTES_PER_BODY: u64 = 8 + 32;

/// The outputs of the GPU step as a stage: every entry point of `shaders/contacts.wgsl`.
#[derive(Debug, Clone)]
pub(super) struct ContactStage {
    compact: Kernel,
    prepare_contacts: Kernel,
    key_by_second: Kernel,
    key_by_first: Kernel,
    key_by_time: Kernel,
    order_contacts: Kernel,
    finish_step: Kernel,
    earliest_times: Kernel,
    earliest_partners: Kernel,
    earliest_records: Kernel,
    earliest_walls: Kernel,
}

/// The device buffers the outputs read: the step's parameters, bodies, candidates, their
/// impacts and the sweep's dispatch (its count of swept candidates).
pub(super) struct ContactInputs<'a> {
    pub(super) params: &'a wgpu::Buffer,
    pub(super) bodies: &'a wgpu::Buffer,
    pub(super) pairs: &'a wgpu::Buffer,
    pub(super) impacts: &'a wgpu::Buffer,
    pub(super) sweep_dispatch: &'a wgpu::Buffer,
}

/// The outputs' buffers: the step's counts, each body's earliest contact, and the ordered
/// contacts' buffers when asked.
pub(super) struct ContactBuffers {
    pub(super) counts: wgpu::Buffer,
    finish_group: wgpu::BindGroup,
    earliest_keys: wgpu::Buffer,
    pub(super) hit_count: wgpu::Buffer,
    /// Each body's [`EarliestRecord`](crate::layout::EarliestRecord).
    pub(super) earliest: wgpu::Buffer,
    earliest_groups: [wgpu::BindGroup; 3],
    pub(super) ordered: Option<OrderedBuffers>,
    all: Vec<wgpu::Buffer>,
}

/// The buffers of the ordered contacts.
pub(super) struct OrderedBuffers {
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
    pub(super) fn new(device: &wgpu::Device) -> Self {
        let shader = "contacts.wgsl";
        let module = module(device, shader, CONTACTS_WGSL);
        let kernel = |name, bindings| Kernel::new(device, &module, shader, name, bindings);
        Self {
            compact: kernel("compact", COMPACT),
            prepare_contacts: kernel("prepare_contacts", PREPARE_CONTACTS),
            key_by_second: kernel("key_by_second", KEY_BY_SECOND),
            key_by_first: kernel("key_by_first", KEY_BY_LATER),
            key_by_time: kernel("key_by_time", KEY_BY_LATER),
            order_contacts: kernel("order_contacts", ORDER_CONTACTS),
            finish_step: kernel("finish_step", FINISH_STEP),
            earliest_times: kernel("earliest_times", EARLIEST_TIMES),
            earliest_partners: kernel("earliest_partners", EARLIEST_PARTNERS),
            earliest_records: kernel("earliest_records", EARLIEST_RECORDS),
            earliest_walls: kernel("earliest_walls", EARLIEST_WALLS),
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
            &self.finish_step,
            &self.earliest_times,
            &self.earliest_partners,
            &self.earliest_records,
            &self.earliest_walls,
        ])
    }

    /// The outputs' buffers over `inputs` for `body_capacity` bodies, with the ordered
    /// contacts' for `contact_capacity` contacts when `ordered` is set.
    pub(super) fn create_buffers(
        &self,
        device: &wgpu::Device,
        inputs: &ContactInputs<'_>,
        body_capacity: u64,
        contact_capacity: Option<u64>,
    ) -> Result<ContactBuffers, Error> {
        use wgpu::BufferUsages as Usage;
        let storage = Usage::STORAGE;
        let counted = COUNTED;
        let mut set = BufferSet::new(device);
        let mut buffer = |label, size: u64, usage| set.make(label, size, usage);
        let counts = buffer("step counts", COUNTS_SIZE, counted);
        let earliest_keys = buffer("step earliest keys", 8 * body_capacity, counted);
        let hit_count = buffer("step hit count", 4, counted);
        let earliest = buffer("step earliest", 32 * body_capacity, counted);
        let ordered = contact_capacity.map(|capacity| {
            let contact_count = buffer("step contact count", 4, counted);
            let contacts = buffer("step contacts", CONTACT_SIZE * capacity, storage);
            let contact_dispatch = buffer(
                "step contact dispatch",
                32,
                storage | Usage::INDIRECT | Usage::COPY_SRC,
            );
            let contact_sort = [
                buffer("step contact sort in", 8 * capacity, storage),
                buffer("step contact sort out", 8 * capacity, storage),
            ];
            let ordered = buffer("step ordered contacts", CONTACT_SIZE * capacity, counted);
            let positions = buffer("step earliest positions", 4 * body_capacity, counted);
            let group = |kernel: &Kernel| {
                kernel.bind(device, |binding| match binding {
                    PARAMS => inputs.params,
                    BODIES => inputs.bodies,
                    PAIRS => inputs.pairs,
                    IMPACTS => inputs.impacts,
                    SWEEP_DISPATCH => inputs.sweep_dispatch,
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
        let finish_group = self.finish_step.bind(device, |binding| match binding {
            PARAMS => inputs.params,
            _ => &counts,
        });
        let earliest_groups = [
            &self.earliest_times,
            &self.earliest_partners,
            &self.earliest_records,
        ]
        .map(|kernel| {
            kernel.bind(device, |binding| match binding {
                PARAMS => inputs.params,
                BODIES => inputs.bodies,
                PAIRS => inputs.pairs,
                IMPACTS => inputs.impacts,
                SWEEP_DISPATCH => inputs.sweep_dispatch,
                EARLIEST_KEYS => &earliest_keys,
                HIT_COUNT => &hit_count,
                EARLIEST => &earliest,
                _ => unreachable!("no binding {binding} among the earliest passes'"),
            })
        });
        let all = set.finish()?;
        Ok(ContactBuffers {
            counts,
            finish_group,
            earliest_keys,
            hit_count,
            earliest,
            earliest_groups,
            ordered,
            all,
        })
    }

    /// Records the ordered contacts of the swept candidates: compaction, three stable sorts
    /// (by the second body, the first, then the time) and the order, with each body's
    /// earliest position in it. `body_count` is the device's count of the step's bodies
    /// (word 0), `index_bits` the bits of the largest body index.
    pub(super) fn record_ordered(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &OrderedBuffers,
        sorter: &mut lampshade::KeyValueSorter,
        sweep_dispatch: &wgpu::Buffer,
        index_bits: u32,
    ) -> Result<(), Error> {
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

    /// Records each body's earliest contact among the swept candidates (no sort: the least
    /// time's key, then the lowest partner at it, then the record both name), counting the
    /// hits. `sweep_dispatch` holds the swept candidates' dispatch.
    pub(super) fn record_earliest(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &ContactBuffers,
        sweep_dispatch: &wgpu::Buffer,
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
    }

    /// The bind group of `earliest_walls` over `buffers` and the walls stage's contacts.
    pub(super) fn bind_walls(
        &self,
        device: &wgpu::Device,
        params: &wgpu::Buffer,
        buffers: &ContactBuffers,
        wall_contacts: &wgpu::Buffer,
    ) -> wgpu::BindGroup {
        self.earliest_walls.bind(device, |binding| match binding {
            PARAMS => params,
            EARLIEST => &buffers.earliest,
            _ => wall_contacts,
        })
    }

    /// Records `earliest_walls` (one invocation a body, dispatched from `body_dispatch`):
    /// each body's earliest wall where it is strictly earlier than its earliest pair.
    pub(super) fn record_walls(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        group: &wgpu::BindGroup,
        body_dispatch: &wgpu::Buffer,
    ) {
        self.earliest_walls
            .record(encoder, group, Workgroups::Indirect(body_dispatch));
    }

    /// Records `finish_step`: the validity word of `buffers.counts`, from the counts copied
    /// into it before.
    pub(super) fn record_finish(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        buffers: &ContactBuffers,
    ) {
        self.finish_step
            .record(encoder, &buffers.finish_group, Workgroups::Direct(1, 1));
    }
}

impl OrderedBuffers {
    /// The contacts' dispatch, whose `overflowed` word says the contacts outgrew the buffer.
    pub(super) fn dispatch(&self) -> &wgpu::Buffer {
        &self.contact_dispatch
    }
}

impl ContactBuffers {
    /// Bytes of device memory the buffers hold.
    pub(super) fn memory_bytes(&self) -> u64 {
        self.all.iter().map(wgpu::Buffer::size).sum()
    }
}
