//! Grids of cells for the event loop: [`Cells`], a broad phase for bodies of similar size
//! (see its documentation), and `SkinGrid`, the loop's own grid of skin centres for local
//! skins, kept up to date body by body. Both lay their cells the same way (`lay_out`): at
//! least as wide as the widest pair's reach, so that two bodies within reach lie in the same
//! or in adjacent cells.

use crate::par::prelude::*;
use glam::DVec3;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};

use super::BroadPhase;
use crate::error::Error;
use crate::geometry::MovingSphere;
use crate::groups::{CollisionGroups, interact};
use crate::options::SweepOptions;
use crate::validate::check_length;

/// The cells of one axis: how many, how wide, and whether they wrap around.
#[derive(Copy, Clone, Debug, Default)]
struct Axis {
    count: usize,
    origin: f64,
    width: f64,
    period: f64,
    wraps: bool,
}

impl Axis {
    /// The cell of coordinate `x`.
    fn cell(&self, x: f64) -> usize {
        // From 0 up (a wrapped coordinate, or one above the lowest): truncation is the floor;
        // NaN and below 0 go to cell 0.
        (((x - self.origin) / self.width).max(0.0) as usize).min(self.count - 1)
    }

    /// `x` wrapped into the period, where the axis wraps.
    fn wrap(&self, x: f64) -> f64 {
        if !self.wraps || (0.0..self.period).contains(&x) {
            x
        } else {
            x.rem_euclid(self.period)
        }
    }

    /// The cell `offset` (−1, 0 or 1) away from `cell`, if there is one, and the shift that
    /// takes its bodies to their image beside `cell` (a period where it lies across the box's
    /// face).
    fn neighbour(&self, cell: usize, offset: isize) -> Option<(usize, f64)> {
        let moved = cell as isize + offset;
        let count = self.count as isize;
        if count == 1 && offset != 0 {
            // One cell along the axis: its own neighbour, tested with offset 0 alone.
            None
        } else if (0..count).contains(&moved) {
            Some((moved as usize, 0.0))
        } else if !self.wraps {
            None
        } else if moved < 0 {
            Some(((moved + count) as usize, -self.period))
        } else {
            Some(((moved - count) as usize, self.period))
        }
    }
}

/// The cell offsets that each cell tests: itself (its own pairs once) and 13 of its 26
/// neighbours, one of each opposite pair, so that every pair of adjacent cells is tested once.
const HALF_STENCIL: [[isize; 3]; 13] = [
    [1, 0, 0],
    [-1, 1, 0],
    [0, 1, 0],
    [1, 1, 0],
    [-1, -1, 1],
    [0, -1, 1],
    [1, -1, 1],
    [-1, 0, 1],
    [0, 0, 1],
    [1, 0, 1],
    [-1, 1, 1],
    [0, 1, 1],
    [1, 1, 1],
];

/// From this many bodies, the layers of cells are searched on rayon's threads.
const PARALLEL_BODIES: usize = 16_384;

/// At most this many cells a body, where the bodies' spread would make more (bodies far
/// apart in open space): the cells then widen.
const CELLS_PER_BODY: f64 = 2.0;

/// The cells of each axis over `centres`: at least `width` wide, and at most
/// [`CELLS_PER_BODY`] cells a body (where the bodies' spread would make more, bodies far
/// apart in open space, the cells widen); in a periodic box of `period` (infinite where an
/// axis does not wrap) a whole number of them a period, or one where fewer than three would
/// fit (two would make each pair of cells neighbours twice).
fn lay_out(centres: impl Iterator<Item = DVec3> + Clone, width: f64, period: DVec3) -> [Axis; 3] {
    let (low, high) = centres.clone().fold(
        (DVec3::INFINITY, DVec3::NEG_INFINITY),
        |(low, high), centre| (low.min(centre), high.max(centre)),
    );
    let bodies = centres.count();
    let extent = DVec3::select(
        period.is_finite_mask(),
        period,
        (high - low).max(DVec3::ZERO),
    );
    let limit = CELLS_PER_BODY * bodies as f64 + 8.0;
    let mut width = width.max(f64::MIN_POSITIVE);
    let cells = |width: f64| {
        (0..3)
            .map(|axis| (extent[axis] / width).floor().max(1.0))
            .product::<f64>()
    };
    // Widened until the cells are within the limit: by the cube root of the excess where
    // every axis holds several cells, by more where some hold one (a long thin world, or a
    // large periodic box around few bodies), each round taking at least a third of the
    // excess's logarithm; a few rounds in all.
    for _ in 0..64 {
        let excess = cells(width) / limit;
        if excess <= 1.0 {
            break;
        }
        width *= excess.cbrt().max(1.0 + 1e-3);
    }
    if cells(width) > limit {
        width = extent.max_element().max(width);
    }
    std::array::from_fn(|axis| {
        let wraps = period[axis].is_finite();
        let count = ((extent[axis] / width).floor() as usize).max(1);
        let count = if wraps && count < 3 { 1 } else { count };
        Axis {
            count,
            origin: if wraps { 0.0 } else { low[axis] },
            width: if wraps {
                period[axis] / count as f64
            } else {
                width.max(extent[axis] / count as f64)
            },
            period: period[axis],
            wraps,
        }
    })
}

/// The cell at `cell` (per axis) of a grid laid as `axes`, as one index: x fastest.
fn index(axes: &[Axis; 3], cell: [usize; 3]) -> usize {
    (cell[2] * axes[1].count + cell[1]) * axes[0].count + cell[0]
}

/// A skin in the grid: its centre, the radius of its body, the body and its groups.
#[derive(Copy, Clone, Debug)]
struct Skin {
    centre: DVec3,
    radius: f64,
    body: u32,
    groups: CollisionGroups,
}

/// The event loop's grid of skin centres, kept up to date body by body: each cell holds its
/// skins side by side (centre and radius), so that a body renewing its skin finds the
/// bodies whose skins may touch its new one by reading the cells around it, and nothing
/// else.
#[derive(Clone, Debug, Default)]
pub(super) struct SkinGrid {
    axes: [Axis; 3],
    cells: Vec<Vec<Skin>>,
    /// Per body, its cell.
    cell_of: Vec<u32>,
}

impl SkinGrid {
    /// Lays cells at least `width` wide over `centres` and puts each body (of radius
    /// `radii[i]` and collision groups `groups[i]`; all [`CollisionGroups::ALL`] where
    /// `groups` is empty) in its cell.
    pub(super) fn build(
        &mut self,
        centres: &[DVec3],
        radii: &[f64],
        groups: &[CollisionGroups],
        width: f64,
        period: DVec3,
    ) {
        self.axes = lay_out(centres.iter().copied(), width, period);
        let cells = self.axes.iter().map(|axis| axis.count).product::<usize>();
        self.cells.resize_with(cells, Vec::new);
        self.cells.truncate(cells);
        self.cells.iter_mut().for_each(Vec::clear);
        self.cell_of.clear();
        for (body, (&centre, &radius)) in centres.iter().zip(radii).enumerate() {
            let cell = self.cell_at(centre);
            self.cell_of.push(cell as u32);
            self.cells[cell].push(Skin {
                centre,
                radius,
                body: body as u32,
                groups: groups.get(body).copied().unwrap_or(CollisionGroups::ALL),
            });
        }
    }

    /// The cell (per axis) of `point`.
    fn coordinates(&self, point: DVec3) -> [usize; 3] {
        std::array::from_fn(|k| {
            let axis = &self.axes[k];
            axis.cell(axis.wrap(point[k]))
        })
    }

    fn cell_at(&self, point: DVec3) -> usize {
        self.index(self.coordinates(point))
    }

    fn index(&self, cell: [usize; 3]) -> usize {
        index(&self.axes, cell)
    }

    /// Moves `body`'s skin centre to `centre`.
    pub(super) fn relocate(&mut self, body: usize, centre: DVec3) {
        let (old, cell) = (self.cell_of[body] as usize, self.cell_at(centre));
        let at = self.cells[old]
            .iter()
            .position(|skin| skin.body as usize == body)
            .expect("every body is in its cell");
        let mut skin = self.cells[old].swap_remove(at);
        skin.centre = centre;
        self.cells[cell].push(skin);
        self.cell_of[body] = cell as u32;
    }

    /// Pushes into `found` every body other than `body` whose skin centre lies within `reach`
    /// plus its radius of `centre` (at the nearest image in the box of `period`) and whose
    /// groups interact with `groups`: those of the cells around `centre`, which hold every
    /// centre within a cell's width of it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn near(
        &self,
        body: usize,
        centre: DVec3,
        reach: f64,
        groups: CollisionGroups,
        period: DVec3,
        found: &mut Vec<u32>,
    ) -> u64 {
        let mut scanned = 0;
        let cell = self.coordinates(centre);
        // Per axis, the cells around (each once) and the shift to their image beside this
        // one; with one cell along a wrapping axis, each offset is wrapped instead.
        let around: [([(usize, f64); 3], usize); 3] = std::array::from_fn(|axis| {
            let mut cells = [(0, 0.0); 3];
            let mut count = 0;
            for offset in -1..=1 {
                if let Some(near) = self.axes[axis].neighbour(cell[axis], offset)
                    && !cells[..count].iter().any(|&(seen, _)| seen == near.0)
                {
                    cells[count] = near;
                    count += 1;
                }
            }
            (cells, count)
        });
        let wrap_each = self.axes.iter().any(|axis| axis.wraps && axis.count == 1);
        let half = period * 0.5;
        for &(z, sz) in &around[2].0[..around[2].1] {
            for &(y, sy) in &around[1].0[..around[1].1] {
                for &(x, sx) in &around[0].0[..around[0].1] {
                    let origin = centre - DVec3::new(sx, sy, sz);
                    let cell = &self.cells[self.index([x, y, z])];
                    scanned += cell.len() as u64;
                    for skin in cell {
                        let mut offset = skin.centre - origin;
                        if wrap_each {
                            let beyond = offset.abs().cmpgt(half);
                            offset =
                                DVec3::select(beyond, offset - period.copysign(offset), offset);
                        }
                        let limit = reach + skin.radius;
                        if offset.length_squared() <= limit * limit
                            && groups.interacts_with(skin.groups)
                        {
                            found.push(skin.body);
                        }
                    }
                }
            }
        }
        if let Some(at) = found.iter().position(|&other| other as usize == body) {
            found.swap_remove(at);
        }
        scanned
    }
}

/// A uniform grid of cells: the event loop's broad phase for bodies of similar size.
///
/// With the cells at least as wide as the largest sphere, two spheres that touch lie in the
/// same or in adjacent cells, so each body is tested only against the bodies of its own cell
/// and of half of its 26 neighbours (the other half test it): what event-driven codes for
/// hard-sphere gases use, and for them several times faster than the general step
/// ([`crate::cpu::ContactFinder`], a tree over swept boxes, which also sweeps and orders its
/// contacts). Spheres of very different sizes put many bodies in one cell: there, use the
/// step. The test is exact on the spheres given (the distance between centres in f64 from
/// their f32 coordinates, at the nearest image, against the sum of the radii); displacements
/// are not looked at. It keeps its memory from one call to the next.
///
/// Used by: `docs/guide.md` ("Simulations: the event loop"), `examples/arrays.rs`,
/// `python/src/events.rs` (the default broad phase).
///
/// # Example
/// ```
/// use sweepcast::events::{BroadPhase, Cells};
/// use sweepcast::glam::Vec3;
/// use sweepcast::{MovingSphere, SweepOptions};
///
/// let spheres = [
///     MovingSphere::new(Vec3::ZERO, 1.0, Vec3::ZERO),
///     MovingSphere::new(Vec3::new(2.0, 0.0, 0.0), 1.0, Vec3::ZERO), // touches the first
///     MovingSphere::new(Vec3::new(5.0, 0.0, 0.0), 1.0, Vec3::ZERO),
/// ];
/// let mut pairs = Vec::new();
/// Cells::new().touching_pairs(&spheres, &[], SweepOptions::default(), &mut pairs)?;
/// assert_eq!(pairs, [[0, 1]]);
/// # Ok::<(), sweepcast::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cells {
    axes: [Axis; 3],
    /// Per body, its cell; per cell, where its bodies start in `order`.
    cell_of: Vec<u32>,
    starts: Vec<u32>,
    /// The bodies in cell order, and their centres (f64) and radii in that order.
    order: Vec<u32>,
    centres: Vec<DVec3>,
    radii: Vec<f64>,
    /// The bodies' collision groups in that order; empty where every pair interacts.
    groups: Vec<CollisionGroups>,
    /// Per task, the pairs it found.
    found: Vec<Vec<[u32; 2]>>,
}

impl Cells {
    /// A grid with no memory yet.
    ///
    /// Used by: `examples/arrays.rs`, `python/src/events.rs` (the default broad phase).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Lays the cells over `spheres`, at least as wide as the largest diameter.
    fn lay_out(&mut self, spheres: &[MovingSphere], options: &SweepOptions) {
        let diameter = spheres
            .iter()
            .map(|sphere| 2.0 * f64::from(sphere.radius))
            .fold(0.0, f64::max);
        let period = options
            .periodic_box
            .map_or(DVec3::INFINITY, |periodic_box| {
                periodic_box.period().as_dvec3()
            });
        self.axes = lay_out(
            spheres.iter().map(|sphere| sphere.center.as_dvec3()),
            diameter,
            period,
        );
    }

    /// The cell at `cell` (per axis) as one index.
    fn index(&self, cell: [usize; 3]) -> usize {
        index(&self.axes, cell)
    }

    /// Sorts the bodies into their cells (a counting sort), with their `groups` (empty: every
    /// pair interacts).
    fn fill(&mut self, spheres: &[MovingSphere], groups: &[CollisionGroups]) {
        let cell_count = self.axes.iter().map(|axis| axis.count).product::<usize>();
        let axes = self.axes;
        self.cell_of.clear();
        self.cell_of.extend(spheres.iter().map(|sphere| {
            let centre = sphere.center.as_dvec3();
            index(
                &axes,
                [0, 1, 2].map(|axis| axes[axis].cell(axes[axis].wrap(centre[axis]))),
            ) as u32
        }));
        self.starts.clear();
        self.starts.resize(cell_count + 1, 0);
        for &cell in &self.cell_of {
            self.starts[cell as usize + 1] += 1;
        }
        for cell in 0..cell_count {
            self.starts[cell + 1] += self.starts[cell];
        }
        self.order.clear();
        self.order.resize(spheres.len(), 0);
        let mut next = self.starts.clone();
        for (body, &cell) in self.cell_of.iter().enumerate() {
            self.order[next[cell as usize] as usize] = body as u32;
            next[cell as usize] += 1;
        }
        self.centres.clear();
        self.centres.extend(self.order.iter().map(|&body| {
            let centre = spheres[body as usize].center.as_dvec3();
            DVec3::from_array([0, 1, 2].map(|axis| axes[axis].wrap(centre[axis])))
        }));
        self.radii.clear();
        self.radii.extend(
            self.order
                .iter()
                .map(|&body| f64::from(spheres[body as usize].radius)),
        );
        self.groups.clear();
        if !groups.is_empty() {
            self.groups
                .extend(self.order.iter().map(|&body| groups[body as usize]));
        }
    }

    /// The pairs of cells of the z-layer `z` into `pairs`, until the layers together have
    /// found more than `spent`'s pairs or made more than its tests (each layer adds what it
    /// found and tested to `spent` after each cell, and looks at it after each body).
    fn layer_pairs(&self, z: usize, pairs: &mut Vec<[u32; 2]>, spent: &Spent) {
        let [ax, ay, az] = self.axes;
        // With three cells or more along each wrapping axis, a neighbour across the box's
        // face is reached by shifting its bodies by a period; with one, the bodies of a cell
        // are their own neighbours across the face, and each offset is wrapped.
        let wrap_each = self.axes.iter().any(|axis| axis.wraps && axis.count == 1);
        let period = DVec3::new(ax.period, ay.period, az.period);
        let mut layer = Unpublished::default();
        for y in 0..ay.count {
            for x in 0..ax.count {
                let cell = self.index([x, y, z]);
                let own = self.starts[cell] as usize..self.starts[cell + 1] as usize;
                for a in own.clone() {
                    for b in a + 1..own.end {
                        self.test(a, b, DVec3::ZERO, wrap_each, period, pairs);
                    }
                    // A crowded cell (a huge skin) stops within a body's tests of the limit.
                    layer.tests += (own.end - a) as u64;
                    if spent.passed(&layer, pairs.len()) {
                        return spent.publish(&mut layer, pairs.len());
                    }
                }
                for offset in HALF_STENCIL {
                    let (Some((nx, sx)), Some((ny, sy)), Some((nz, sz))) = (
                        ax.neighbour(x, offset[0]),
                        ay.neighbour(y, offset[1]),
                        az.neighbour(z, offset[2]),
                    ) else {
                        continue;
                    };
                    let other = self.index([nx, ny, nz]);
                    if other == cell {
                        continue;
                    }
                    let shift = DVec3::new(sx, sy, sz);
                    let theirs = self.starts[other] as usize..self.starts[other + 1] as usize;
                    for a in own.clone() {
                        for b in theirs.clone() {
                            self.test(a, b, shift, wrap_each, period, pairs);
                        }
                        layer.tests += theirs.len() as u64 + 1;
                        if spent.passed(&layer, pairs.len()) {
                            return spent.publish(&mut layer, pairs.len());
                        }
                    }
                }
                layer.tests += 1;
                spent.publish(&mut layer, pairs.len());
                if spent.over() {
                    return;
                }
            }
        }
    }

    /// Whether the spheres `a` and `b` (in cell order; `b`'s centre shifted by `shift`, or,
    /// with `wrap_each`, at the nearest image) touch; if so, their pair goes into `pairs`.
    #[inline(always)]
    fn test(
        &self,
        a: usize,
        b: usize,
        shift: DVec3,
        wrap_each: bool,
        period: DVec3,
        pairs: &mut Vec<[u32; 2]>,
    ) {
        let mut offset = self.centres[b] + shift - self.centres[a];
        if wrap_each {
            let beyond = offset.abs().cmpgt(period * 0.5);
            offset = DVec3::select(beyond, offset - period.copysign(offset), offset);
        }
        let reach = self.radii[a] + self.radii[b];
        if offset.length_squared() <= reach * reach && interact(&self.groups, a, b) {
            pairs.push([self.order[a], self.order[b]]);
        }
    }
}

impl BroadPhase for Cells {
    /// Every pair of `spheres` that touch or overlap and whose groups interact, at rest
    /// (displacements are not looked at), at the nearest image in `options`' periodic box.
    fn touching_pairs(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
    ) -> Result<(), Error> {
        self.touching_pairs_within(spheres, groups, options, pairs, usize::MAX, u64::MAX)
            .map(|_| ())
    }

    /// Stops soon after the pairs found pass `max_pairs` or the pairs tested pass `max_work`
    /// (within a body's of each, in each layer at work); its work is the pairs it tested, one
    /// a cell, and one a body.
    fn touching_pairs_within(
        &mut self,
        spheres: &[MovingSphere],
        groups: &[CollisionGroups],
        options: SweepOptions,
        pairs: &mut Vec<[u32; 2]>,
        max_pairs: usize,
        max_work: u64,
    ) -> Result<u64, Error> {
        pairs.clear();
        check_length(groups, spheres.len())?;
        if spheres.is_empty() {
            return Ok(0);
        }
        crate::validate::validate_bodies(spheres)?;
        self.lay_out(spheres, &options);
        self.fill(spheres, groups);
        let layers = self.axes[2].count;
        self.found
            .resize_with(layers.max(self.found.len()), Vec::new);
        let mut found = std::mem::take(&mut self.found);
        let spent = Spent {
            pairs: AtomicUsize::new(0),
            tests: AtomicU64::new(spheres.len() as u64),
            max_pairs,
            max_tests: max_work,
        };
        let each = |(z, layer): (usize, &mut Vec<[u32; 2]>)| {
            layer.clear();
            if !spent.over() {
                self.layer_pairs(z, layer, &spent);
            }
        };
        // Layers side by side on rayon's threads where the bodies are many enough to pay for
        // waking them.
        if spheres.len() >= PARALLEL_BODIES {
            found[..layers].par_iter_mut().enumerate().for_each(each);
        } else {
            found[..layers].iter_mut().enumerate().for_each(each);
        }
        let total = found[..layers].iter().map(Vec::len).sum::<usize>();
        let tests = spent.tests.load(AtomicOrdering::Relaxed);
        let within = super::too_many_pairs(total as u64, max_pairs)
            .and_then(|()| super::within_work(tests, max_work));
        if within.is_ok() {
            for layer in &found[..layers] {
                pairs.extend_from_slice(layer);
            }
        } else {
            // The layers give back the memory of the burst.
            found.iter_mut().for_each(|layer| *layer = Vec::new());
        }
        self.found = found;
        within
    }
}

/// What the layers of a run of [`Cells`] have found and tested together, and the limits.
struct Spent {
    pairs: AtomicUsize,
    tests: AtomicU64,
    max_pairs: usize,
    max_tests: u64,
}

/// What a layer has found (its pairs up to `pairs` are counted in [`Spent`]) and tested
/// since it last added to [`Spent`].
#[derive(Default)]
struct Unpublished {
    pairs: usize,
    tests: u64,
}

impl Spent {
    /// Whether the layers, with this layer's unpublished pairs (of `found` in all) and tests,
    /// have passed a limit.
    fn passed(&self, layer: &Unpublished, found: usize) -> bool {
        self.pairs.load(AtomicOrdering::Relaxed) + (found - layer.pairs) > self.max_pairs
            || self.tests.load(AtomicOrdering::Relaxed) + layer.tests > self.max_tests
    }

    /// Adds a layer's unpublished pairs (of `found` in all) and tests.
    fn publish(&self, layer: &mut Unpublished, found: usize) {
        self.pairs
            .fetch_add(found - layer.pairs, AtomicOrdering::Relaxed);
        self.tests.fetch_add(layer.tests, AtomicOrdering::Relaxed);
        *layer = Unpublished {
            pairs: found,
            tests: 0,
        };
    }

    /// Whether the layers have passed a limit.
    fn over(&self) -> bool {
        self.passed(&Unpublished::default(), 0)
    }
}
