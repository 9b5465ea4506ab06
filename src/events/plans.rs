//! Each body's plan (its next event: a pair, a wall, its skin, a recheck of an image, a
//! wrap; the records are next.rs's) and the bookkeeping that keeps it right: predicting a
//! body, offering its pairs, the walls' impacts and horizons, the pieces of a path in a
//! periodic box.

use super::*;

impl EventLoop {
    /// The bodies where the loop goes on: each path over the step within the range.
    pub(super) fn check_paths(&self, step: f64) -> Result<(), Error> {
        match self.beyond_range(self.clock + step) {
            Some((body, value)) => Err(Error::OutOfRange {
                body,
                field: BodyField::Center,
                value,
            }),
            None => Ok(()),
        }
    }

    /// The first body (and its coordinate) that is beyond [`MAX_MAGNITUDE`] at `time` along
    /// an axis that does not wrap.
    pub(super) fn beyond_range(&self, time: f64) -> Option<(usize, f64)> {
        let open = !self.period.is_finite_mask();
        if !open.any() {
            return None;
        }
        self.motions.iter().enumerate().find_map(|(index, motion)| {
            beyond(motion.at(time), self.period).map(|value| (index, value))
        })
    }

    /// Body `index`'s next event again from `now`: its earliest pair kept if its partner has
    /// not collided since (its motion has not changed), against its walls and skin found
    /// again; else every partner predicted again.
    pub(super) fn replan(&mut self, walls: &[Wall], index: usize, now: f64) {
        let pair = self.plans[index].pair;
        if self.is_current(&pair) {
            let own = self.own_events(walls, index, now);
            self.set_next(index, if pair.is_before(&own) { pair } else { own });
        } else {
            self.predict(walls, index, now);
        }
    }

    /// Asks the CPU to bring into its cache what the next events will read (the gas's
    /// bodies fill more than a core's cache), in two stages a pass apart, so that each
    /// stage reads only lines the last one asked for: for the queue's second body (most
    /// often the next one), its own lines; for `first`, the body whose event comes now, its
    /// partners' motions, and its partner's own lines.
    pub(super) fn prefetch(&self, first: usize) {
        if let Some(second) = self.queue.second() {
            self.prefetch_own(second);
        }
        for &other in self.lists.of(first) {
            prefetch(&raw const self.motions[other as usize]);
        }
        if let Kind::Pair { other, .. } = self.plans[first].next.kind {
            self.prefetch_own(other as usize);
        }
    }

    /// Asks for body `index`'s own lines: its motion, plan, partners and skin.
    pub(super) fn prefetch_own(&self, index: usize) {
        prefetch(&raw const self.motions[index]);
        prefetch(&raw const self.plans[index]);
        prefetch(self.lists.of(index).as_ptr());
        prefetch(&raw const self.centres[index]);
    }

    /// Whether `next`, a pair's event or nothing, is still right: its partner has not
    /// collided since it was predicted.
    pub(super) fn is_current(&self, next: &Next) -> bool {
        match next.kind {
            Kind::Pair { other, count } => self.counts[other as usize] == count,
            Kind::Recheck | Kind::Nothing => true,
            Kind::Wall { .. } | Kind::Skin | Kind::Wrap => false,
        }
    }

    /// Predicts body `index`'s next event from `now`: its partners, its walls, its skin.
    pub(super) fn predict(&mut self, walls: &[Wall], index: usize, now: f64) {
        // The earliest impact: by time, then by partner (the order of the partners does not
        // matter); and the earliest recheck of an image.
        let predict::Earliest {
            time,
            partner,
            recheck,
        } = {
            self.work += self.lists.of(index).len() as u64;
            predict::earliest(
                self.simd,
                &self.motions,
                &self.box_,
                index,
                self.lists.of(index),
                now,
            )
        };
        let recheck = now + recheck.sqrt();
        let mut pair = if partner == u32::MAX {
            Next::NOTHING
        } else {
            Next {
                time,
                kind: Kind::Pair {
                    other: partner,
                    count: self.counts[partner as usize],
                },
            }
        };
        let again = Next {
            time: recheck,
            kind: Kind::Recheck,
        };
        if recheck.is_finite() && again.is_before(&pair) {
            pair = again;
        }
        self.plans[index].pair = pair;
        let own = self.own_events(walls, index, now);
        self.set_next(index, if pair.is_before(&own) { pair } else { own });
    }

    /// The earliest of body `index`'s leaving its skin, meeting a wall and (in a periodic
    /// box with walls) crossing a face of the box.
    pub(super) fn own_events(&mut self, walls: &[Wall], index: usize, now: f64) -> Next {
        let exit = self.skin_exit(index);
        if !exit.is_finite() {
            return Next::NOTHING;
        }
        let mut best = Next {
            time: exit.max(now),
            kind: Kind::Skin,
        };
        if walls.is_empty() {
            return best;
        }
        self.work += walls.len() as u64;
        // Each wall swept from the start of the body's piece of path in the box (its own
        // time, or where it last crossed a face) over a horizon of its own motion, not to the
        // skin's exit (which depends on where the skin was centred), with the f64 oracle and
        // the separating option: so the time does not depend on when it was predicted.
        let piece = self.piece(index, now);
        if piece.end.is_finite() {
            let wrap = Next {
                time: piece.end,
                kind: Kind::Wrap,
            };
            if wrap.is_before(&best) {
                best = wrap;
            }
        }
        for (wall_index, wall) in walls.iter().enumerate() {
            if let Some((time, ..)) = wall_impact(wall, &piece.motion)
                && time < piece.end
            {
                let candidate = Next {
                    time: time.max(now),
                    kind: Kind::Wall {
                        wall: wall_index as u32,
                    },
                };
                if candidate.is_before(&best) {
                    best = candidate;
                }
            }
        }
        best
    }

    /// Body `index`'s first impact with `wall` in its piece of path at `now` (as
    /// [`EventLoop::own_events`] predicted it).
    pub(super) fn wall_impact(
        &self,
        wall: &Wall,
        index: usize,
        now: f64,
    ) -> Option<(f64, DVec3, DVec3)> {
        let piece = self.piece(index, now);
        wall_impact(wall, &piece.motion).filter(|&(time, ..)| time < piece.end)
    }

    /// The piece of body `index`'s path that holds `now`, in the box: in open space (or
    /// where the body does not move along an axis that wraps) its whole motion; in a periodic
    /// box, from the later of its own time and its last crossing of a face before `now` to
    /// its next one after `now` (each crossing's time from the body's motion alone, so the
    /// pieces do not depend on `now`), its centre there shifted back into the box by the
    /// periods crossed.
    pub(super) fn piece(&self, index: usize, now: f64) -> Piece {
        let motion = self.motions[index];
        let mut piece = Piece {
            motion,
            end: f64::INFINITY,
        };
        if !self.box_.wraps {
            return piece;
        }
        let mut start = motion.time;
        let mut shift = DVec3::ZERO;
        for axis in 0..3 {
            let (period, speed) = (self.period[axis], motion.velocity[axis]);
            if !period.is_finite() || speed == 0.0 {
                continue;
            }
            let from = motion.position[axis];
            // The time at which the path reaches the face `cell × period`.
            let reaches = |cell: f64| motion.time + (cell * period - from) / speed;
            let ahead = if speed > 0.0 { 1.0 } else { 0.0 };
            let mut cell = ((from + speed * (now - motion.time)) / period).floor();
            // The cell whose crossings hold `now`: entered at or before it, left after it.
            for _ in 0..2 {
                if reaches(cell + ahead) <= now {
                    cell += speed.signum();
                } else if reaches(cell + 1.0 - ahead) > now {
                    cell -= speed.signum();
                }
            }
            start = start.max(reaches(cell + 1.0 - ahead));
            piece.end = piece.end.min(reaches(cell + ahead));
            shift[axis] = cell * period;
        }
        piece.motion.position = motion.at(start) - shift;
        piece.motion.time = start;
        piece
    }

    /// The prediction for bodies `a` and `b` from `now` (see [`predict`]).
    pub(super) fn pair_time(&self, a: usize, b: usize, now: f64) -> Prediction {
        predict::pair_time(&self.motions, &self.box_, a, b, now)
    }

    /// Makes `next` body `index`'s next event, and queues it.
    pub(super) fn set_next(&mut self, index: usize, next: Next) {
        self.plans[index].next = next;
        self.queue.set(index, next.time);
    }

    /// Makes `candidate` body `index`'s next event if it comes first.
    pub(super) fn offer(&mut self, index: usize, candidate: Next) {
        if candidate.is_before(&self.plans[index].next) {
            self.set_next(index, candidate);
        }
    }

    /// Body `index`'s event of `prediction` for its pair with `other`, if any.
    pub(super) fn pair_next(&self, other: usize, prediction: Prediction, now: f64) -> Option<Next> {
        match prediction {
            Prediction::Impact(time) => Some(Next {
                time: time.max(now),
                kind: Kind::Pair {
                    other: other as u32,
                    count: self.counts[other],
                },
            }),
            Prediction::Recheck(lasts) => Some(Next {
                time: now + lasts.sqrt(),
                kind: Kind::Recheck,
            }),
            Prediction::Never => None,
        }
    }

    /// Offers body `index` the event of `prediction` for its pair with `other`: kept as its
    /// earliest pair's if it comes first, and as its next event if it comes first.
    pub(super) fn offer_pair(
        &mut self,
        index: usize,
        other: usize,
        prediction: Prediction,
        now: f64,
    ) {
        let Some(candidate) = self.pair_next(other, prediction, now) else {
            return;
        };
        if candidate.is_before(&self.plans[index].pair) {
            self.plans[index].pair = candidate;
        }
        self.offer(index, candidate);
    }
}

/// A piece of a body's path in a periodic box: its motion from the piece's start (the centre
/// in the box), and when it leaves the box.
#[derive(Copy, Clone, Debug)]
pub(super) struct Piece {
    pub(super) motion: Motion,
    pub(super) end: f64,
}

/// Asks the CPU to bring the cache line at `item` into its cache (nothing where the
/// architecture has no hint here).
#[inline(always)]
pub(super) fn prefetch<T>(item: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it reads nothing and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(item.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

/// `motion`'s first impact with `wall`, swept with the f64 oracle and the separating option
/// over [`wall_horizon`]: its time on the loop's clock, the point and the normal.
pub(super) fn wall_impact(wall: &Wall, motion: &Motion) -> Option<(f64, DVec3, DVec3)> {
    let horizon = wall_horizon(wall, motion)?;
    let swept = Body {
        center: motion.position,
        radius: motion.radius,
        displacement: motion.velocity * horizon,
    };
    let impact = reference::sweep_sphere_wall(&swept, wall, SweepOptions::event_driven())?;
    // Touching at once, the body approaches only beyond what a response's rounding leaves
    // of its speed (as a pair's, [`predict::SETTLED`]).
    let speed = motion.velocity.abs().element_sum();
    if impact.time_of_impact == 0.0
        && motion.velocity.dot(impact.normal) <= predict::SETTLED * speed
    {
        return None;
    }
    Some((
        motion.time + impact.time_of_impact * horizon,
        impact.point,
        impact.normal,
    ))
}

/// How long to sweep `motion` against `wall` to be sure of its first impact, from the
/// motion alone (so that the impact's time does not depend on when it was predicted): a
/// plane, if approached, is met once the approach has closed the gap; a segment while the
/// centre is within the radius of it, so before the centre has travelled the radius plus
/// its distance to the segment's farther end (a segment's farthest point from anywhere is
/// an end). Twice that, and a unit of travel more, so that the impact falls well within.
/// `None` where the body is at rest or moves away from a plane: no impact.
pub(super) fn wall_horizon(wall: &Wall, motion: &Motion) -> Option<f64> {
    let speed = motion.velocity.length();
    let travel = match *wall {
        Wall::Plane { point, normal } => {
            let normal = normal.as_dvec3().normalize();
            let approach = -normal.dot(motion.velocity);
            if approach.is_nan() || approach <= 0.0 {
                return None;
            }
            let height = normal.dot(motion.position - point.as_dvec3());
            (height.abs() + motion.radius) * (speed / approach)
        }
        Wall::Segment { start, end } => {
            let (start, end) = (start.as_dvec3(), end.as_dvec3());
            let farther = (motion.position - start)
                .length()
                .max((motion.position - end).length());
            farther + motion.radius
        }
    };
    (speed > 0.0).then(|| (2.0 * travel + 1.0) / speed)
}
