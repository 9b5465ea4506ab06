//! The skins: checking them, starting a run of steps, asking the broad phase for the
//! partners again (every body, or one body in the loop's own grid), and a skin's exit time.

use super::*;

impl EventLoop {
    /// The skin for `bodies` (the one set, or the default), checked against the step: the
    /// fastest body, unhindered, would renew its skin `speed × step / skin` times, each
    /// renewal a unit of work at least; more than the work limit is [`Error::SkinTooThin`]
    /// at once.
    pub(super) fn check_skin(&self, bodies: &[EventBody], step: f64) -> Result<(), Error> {
        let skin = match (self.live, self.skin_setting) {
            (true, _) => self.skin,
            (false, Some(skin)) => skin,
            (false, None) => default_skin(bodies, step, self.period),
        };
        let Some((body, speed)) = bodies
            .iter()
            .map(|body| body.velocity.length())
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(());
        };
        let renewals = speed * step / skin;
        if renewals > self.max_work as f64 {
            return Err(Error::SkinTooThin {
                body,
                skin,
                speed,
                renewals,
            });
        }
        Ok(())
    }

    /// Body `index`, its skin just renewed at `now`, must leave it later than `now`: else the
    /// clock cannot move on at its speed ([`Error::SkinTooThin`]).
    pub(super) fn check_renewed(&self, index: usize, now: f64) -> Result<(), Error> {
        let next = self.plans[index].next;
        if next.kind == Kind::Skin && next.time <= now {
            return Err(Error::SkinTooThin {
                body: index,
                skin: self.skin,
                speed: self.motions[index].velocity.length(),
                renewals: f64::INFINITY,
            });
        }
        Ok(())
    }

    /// Starts afresh from `bodies`, at the start of the step.
    pub(super) fn start(
        &mut self,
        bodies: &[EventBody],
        walls: &[Wall],
        step: f64,
        broad_phase: &mut impl BroadPhase,
    ) -> Result<(), Error> {
        let n = bodies.len();
        self.skin = self
            .skin_setting
            .unwrap_or_else(|| default_skin(bodies, step, self.period));
        self.motions.clear();
        self.motions.extend(bodies.iter().map(|body| Motion {
            position: wrap(body.position, self.period),
            time: 0.0,
            velocity: body.velocity,
            radius: body.radius,
        }));
        self.masses.clear();
        self.masses.extend(bodies.iter().map(|body| body.mass));
        self.groups.clear();
        if bodies
            .iter()
            .any(|body| body.groups != CollisionGroups::ALL)
        {
            self.groups.extend(bodies.iter().map(|body| body.groups));
        }
        self.counts.clear();
        self.counts.resize(n, 0);
        self.plans.clear();
        self.plans.resize(n, Plan::NONE);
        self.centres.clear();
        self.centres.resize(n, DVec3::ZERO);
        self.queue.clear(n);
        self.clock = 0.0;
        self.rebuild(walls, 0.0, true, broad_phase)
    }

    /// Centres every body's skin where it is at `now`, asks `broad_phase` for the pairs of
    /// the bodies grown by the skin, and predicts again what may have changed: the next
    /// event of each body that was to leave its skin, the skins' new times, and the pairs
    /// that are new (`afresh`: every event of every body).
    pub(super) fn rebuild(
        &mut self,
        walls: &[Wall],
        now: f64,
        afresh: bool,
        broad_phase: &mut impl BroadPhase,
    ) -> Result<(), Error> {
        self.rebuilds += 1;
        let n = self.motions.len();
        let skin = self.skin;
        self.spheres.clear();
        for plan in &mut self.plans {
            plan.skin_time = now;
        }
        for index in 0..n {
            let motion = &self.motions[index];
            let position = wrap(motion.at(now), self.period);
            self.centres[index] = position;
            // Grown by the skin, and a little more for the spheres' rounding to f32 (a
            // relative 2⁻²⁰ of their coordinates) and for the period's (the broad phases
            // take the nearest image with the f32 period, at most one period away: each
            // sphere grown by the largest rounding of a period grows a pair's radius sum by
            // twice it, beyond the √3 times it that the offset can move). The displacement
            // of twice the skin is only for the check below.
            let slack = position.abs().max_element().max(motion.radius + skin) * 1e-6
                + self.period_rounding;
            self.spheres.push(MovingSphere::new(
                position.as_vec3(),
                (motion.radius + skin + slack) as f32,
                glam::Vec3::splat(skin as f32),
            ));
        }
        // Each body's radius plus twice the skin within a quarter period: while every body
        // stays in its skin, a pair that can touch is nearest at the image that touches,
        // whatever the broad phase (every pair checks nothing itself).
        if let Some(periodic_box) = &self.periodic_box {
            crate::validate::validate_periodic_reach(&self.spheres, periodic_box)?;
        }
        for sphere in &mut self.spheres {
            sphere.displacement = glam::Vec3::ZERO;
        }
        let options = SweepOptions {
            periodic_box: self.periodic_box,
            ..SweepOptions::DEFAULT
        };
        // Each pair takes two slots of the partners.
        let max_pairs = usize::try_from(self.max_partners / 2).unwrap_or(usize::MAX);
        let remaining = self.max_work.saturating_sub(self.work.saturating_add(64));
        let work = broad_phase
            .touching_pairs_within(
                &self.spheres,
                &self.groups,
                options,
                &mut self.pairs,
                max_pairs,
                remaining,
            )
            // A broad phase of the caller's own is held to its contract: work beyond what
            // remained is the limit passed (a sum that wrapped would reset the meter that
            // `max_work` bounds), and a pair naming no body is the caller's error, not an
            // index out of bounds below.
            .and_then(|work| super::within_work(work, remaining))
            .map_err(|error| match error {
                Error::WorkLimit { .. } => Error::WorkLimit {
                    limit: self.max_work,
                },
                error => error,
            })?;
        self.work = self.work.saturating_add(64).saturating_add(work);
        crate::validate::validate_pairs(&self.pairs, n)?;
        // A pair the groups keep apart is never a partner, whatever the broad phase gave.
        if !self.groups.is_empty() {
            let groups = &self.groups;
            self.pairs
                .retain(|&[a, b]| interact(groups, a as usize, b as usize));
        }
        std::mem::swap(&mut self.lists, &mut self.old_lists);
        if afresh {
            self.old_lists.clear(n, 0, self.max_partners)?;
            self.queue.clear(n);
            for plan in &mut self.plans {
                plan.pair = Next::NOTHING;
            }
            if self.local {
                let largest = self.motions.iter().map(|m| m.radius).fold(0.0, f64::max);
                let width = (2.0 * (largest + skin)) * (1.0 + 1e-9);
                let radii: Vec<f64> = self.motions.iter().map(|m| m.radius).collect();
                self.grid
                    .build(&self.centres, &radii, &self.groups, width, self.period);
            }
        }
        self.partner_lists(n)?;
        // The skins. A body that was to leave its skin takes the earliest of its pairs
        // (still right if its partner has not collided since; else it is predicted again),
        // its walls and its new skin; any other may now leave its new skin first.
        for index in 0..n {
            if afresh || self.plans[index].next.kind == Kind::Skin {
                self.replan(walls, index, now);
            } else {
                let exit = Next {
                    time: self.skin_exit(index).max(now),
                    kind: Kind::Skin,
                };
                self.offer(index, exit);
            }
        }
        // The new pairs (every pair, afresh): each is offered to both bodies.
        for first in 0..n {
            let stamp = self.next_stamp();
            for &other in self.old_lists.of(first) {
                self.marks[other as usize] = stamp;
            }
            for slot in 0..self.lists.of(first).len() {
                let other = self.lists.of(first)[slot] as usize;
                if other > first && self.marks[other] != stamp {
                    let prediction = self.pair_time(first, other, now);
                    self.offer_pair(first, other, prediction, now);
                    self.offer_pair(other, first, prediction, now);
                }
            }
        }
        Ok(())
    }

    /// Each body's partners, both ways, from the broad phase's pairs.
    pub(super) fn partner_lists(&mut self, n: usize) -> Result<(), Error> {
        // The most partners a body has, so that the lists are laid out (and checked against
        // the limit) once.
        let degrees = &mut self.marks;
        degrees.clear();
        degrees.resize(n, 0);
        for &[a, b] in &self.pairs {
            degrees[a as usize] += 1;
            degrees[b as usize] += 1;
        }
        let most = degrees.iter().copied().max().unwrap_or(0) as usize;
        self.stamp = u32::MAX;
        self.lists.clear(n, most, self.max_partners)?;
        for &[a, b] in &self.pairs {
            self.lists.push(a as usize, b)?;
            self.lists.push(b as usize, a)?;
        }
        Ok(())
    }

    /// A mark no body has yet.
    pub(super) fn next_stamp(&mut self) -> u32 {
        let n = self.motions.len();
        if self.marks.len() != n || self.stamp == u32::MAX {
            self.marks.clear();
            self.marks.resize(n, 0);
            self.stamp = 0;
        }
        self.stamp += 1;
        self.stamp
    }

    /// Body `index` has left its skin (local skins): its skin is centred where it is at
    /// `now`, its partners found again in the grid (those whose skins touch its new one),
    /// each new one offered their pair's impact, and its own next event predicted.
    pub(super) fn renew(&mut self, walls: &[Wall], index: usize, now: f64) -> Result<(), Error> {
        let centre = wrap(self.motions[index].at(now), self.period);
        self.centres[index] = centre;
        self.plans[index].skin_time = now;
        self.grid.relocate(index, centre);
        let mut near = std::mem::take(&mut self.near);
        near.clear();
        let reach = self.motions[index].radius + 2.0 * self.skin;
        self.work += self.grid.near(
            index,
            centre,
            reach,
            groups_of(&self.groups, index),
            self.period,
            &mut near,
        );
        // Its earliest pair stands (its motion has not changed) if its partner has not
        // collided since; the new partners may come first.
        let kept = self.plans[index].pair;
        let mut pair = if self.is_current(&kept) {
            kept
        } else {
            Next::NOTHING
        };
        let old = self.next_stamp();
        for &other in self.lists.of(index) {
            self.marks[other as usize] = old;
        }
        let new = self.next_stamp();
        for &other in &near {
            let other = other as usize;
            if self.marks[other] != old {
                self.lists.push(other, index as u32)?;
                let prediction = self.pair_time(index, other, now);
                self.offer_pair(other, index, prediction, now);
                if let Some(candidate) = self.pair_next(other, prediction, now)
                    && candidate.is_before(&pair)
                {
                    pair = candidate;
                }
            }
            self.marks[other] = new;
        }
        for slot in 0..self.lists.of(index).len() {
            let other = self.lists.of(index)[slot] as usize;
            if self.marks[other] != new {
                self.lists.remove(other, index as u32);
            }
        }
        self.lists.replace(index, &near)?;
        self.near = near;
        if self.is_current(&kept) {
            self.plans[index].pair = pair;
        }
        self.replan(walls, index, now);
        Ok(())
    }

    /// When body `index` leaves its skin (its centre `skin` from the skin's centre), from its
    /// motion: `|d + v t| = skin` for the offset `d` from the centre (at the later of the
    /// skin's time and the body's), the positive root taken without cancellation; infinite
    /// for a body at rest.
    pub(super) fn skin_exit(&self, index: usize) -> f64 {
        let motion = &self.motions[index];
        let speed_squared = motion.velocity.length_squared();
        if speed_squared == 0.0 {
            return f64::INFINITY;
        }
        let from = motion.time.max(self.plans[index].skin_time);
        let offset = self.box_.nearest(motion.at(from) - self.centres[index]);
        let room = self.skin * self.skin - offset.length_squared();
        if room <= 0.0 {
            return from;
        }
        let outward = offset.dot(motion.velocity);
        let root = (outward * outward + speed_squared * room).sqrt();
        let duration = if outward >= 0.0 {
            room / (outward + root)
        } else {
            (root - outward) / speed_squared
        };
        from + duration
    }
}

/// Half the largest radius; where every radius is 0, the distance the fastest body covers in
/// the step (1 if nothing moves). In a periodic box, shrunk so that every radius plus twice
/// the skin stays within 90% of a quarter period.
pub(super) fn default_skin(bodies: &[EventBody], step: f64, period: DVec3) -> f64 {
    let largest = bodies.iter().map(|body| body.radius).fold(0.0, f64::max);
    let mut skin = if largest > 0.0 {
        0.5 * largest
    } else {
        let fastest = bodies
            .iter()
            .map(|body| body.velocity.length())
            .fold(0.0, f64::max);
        let reach = fastest * step;
        if reach > 0.0 { reach } else { 1.0 }
    };
    let room = 0.45 * (period.min_element() / 4.0 - largest);
    if room > 0.0 {
        skin = skin.min(room);
    }
    skin.clamp(MIN_LENGTH, MAX_MAGNITUDE)
}
