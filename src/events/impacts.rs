//! The impacts: a body at its event, the response applied and checked, the bodies moved,
//! taken back and handed out.

use super::*;

impl EventLoop {
    /// Resolves `body`'s impact `kind` at `now` and predicts what it changed: the response,
    /// its check, the callback, then the bodies' next events (every pair asked for again if
    /// the response moved a body). `false` where a wall's impact is not found again (the body
    /// is then predicted again).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn impact(
        &mut self,
        walls: &[Wall],
        body: usize,
        kind: Kind,
        now: f64,
        response: &mut impl Response,
        broad_phase: &mut impl BroadPhase,
        on_event: &mut impl FnMut(&Event, &Moment<'_>),
    ) -> Result<bool, Error> {
        let Some((event, involved, moved)) = self.resolve(walls, body, kind, now, response)? else {
            self.predict(walls, body, now);
            return Ok(false);
        };
        on_event(
            &event,
            &Moment {
                motions: &self.motions,
                masses: &self.masses,
                groups: &self.groups,
                time: now,
            },
        );
        if moved {
            // The response moved a body or changed a radius: the pairs are asked for again,
            // and every event predicted again.
            self.rebuild(walls, now, true, broad_phase)?;
        } else {
            self.predict(walls, involved[0], now);
            if involved[1] != involved[0] {
                self.predict(walls, involved[1], now);
            }
        }
        Ok(true)
    }

    /// The body `index` as the response sees it.
    pub(super) fn body(&self, index: usize) -> EventBody {
        let motion = &self.motions[index];
        EventBody {
            position: motion.position,
            velocity: motion.velocity,
            radius: motion.radius,
            mass: self.masses[index],
            groups: groups_of(&self.groups, index),
        }
    }

    /// Takes back what the response made of body `index`: whether it moved the body or
    /// changed its radius (what the pairs depend on).
    pub(super) fn take_back(&mut self, index: usize, body: &EventBody) -> bool {
        let motion = &mut self.motions[index];
        let moved = motion.position != body.position || motion.radius != body.radius;
        motion.position = body.position;
        motion.velocity = body.velocity;
        motion.radius = body.radius;
        self.masses[index] = body.mass;
        moved
    }

    /// Resolves `body`'s event `kind` at `now` with `response`: the event, the bodies it
    /// involved, and whether the response moved one of them or changed its radius; `None`
    /// where a wall's impact is not found again. The response is checked: the bodies it leaves
    /// must be valid and no longer approaching, else they are put back as they were just
    /// before it and the error returned.
    pub(super) fn resolve(
        &mut self,
        walls: &[Wall],
        body: usize,
        kind: Kind,
        now: f64,
        response: &mut impl Response,
    ) -> Result<Option<(Event, [usize; 2], bool)>, Error> {
        match kind {
            Kind::Wall { wall } => {
                let Some((_, point, normal)) = self.wall_impact(&walls[wall as usize], body, now)
                else {
                    return Ok(None);
                };
                self.move_to(body, now);
                let mut own = self.body(body);
                let velocity = own.velocity;
                let before = velocity.length();
                response.wall(&mut own, normal);
                let event = Event {
                    time: now - self.clock,
                    body: body as u32,
                    partner: Partner::Wall { index: wall },
                    point,
                    normal,
                    impulse: momentum_change(&own, velocity).unwrap_or(DVec3::ZERO),
                };
                check_response(&event, body, &own)?;
                let speeds = before + own.velocity.length();
                if still_approaching(own.velocity.dot(normal), speeds) {
                    return Err(Error::UnresolvedImpact { event });
                }
                self.counts[body] += 1;
                Ok(Some((event, [body, body], self.take_back(body, &own))))
            }
            Kind::Pair { other, .. } => {
                let other = other as usize;
                let (low, high) = (body.min(other), body.max(other));
                self.move_to(low, now);
                self.move_to(high, now);
                let (mut a, mut b) = (self.body(low), self.body(high));
                let offset = b.position - a.position;
                let shift = self.box_.shift(offset);
                let normal = (offset - shift)
                    .try_normalize()
                    .or_else(|| (a.velocity - b.velocity).try_normalize())
                    .unwrap_or(DVec3::X);
                let point = a.position + normal * a.radius;
                let (velocity_a, velocity_b) = (a.velocity, b.velocity);
                let before = velocity_a.length() + velocity_b.length();
                response.pair(&mut a, &mut b, normal);
                let impulse = momentum_change(&a, velocity_a)
                    .or_else(|| momentum_change(&b, velocity_b).map(|change| -change))
                    .unwrap_or(DVec3::ZERO);
                let event = Event {
                    time: now - self.clock,
                    body: low as u32,
                    partner: Partner::Body {
                        index: high as u32,
                        image: self.box_.periods(shift),
                    },
                    point,
                    normal,
                    impulse,
                };
                check_response(&event, low, &a)?;
                check_response(&event, high, &b)?;
                let speeds = before + a.velocity.length() + b.velocity.length();
                if still_approaching((a.velocity - b.velocity).dot(normal), speeds) {
                    return Err(Error::UnresolvedImpact { event });
                }
                self.counts[low] += 1;
                self.counts[high] += 1;
                let moved = self.take_back(low, &a) | self.take_back(high, &b);
                Ok(Some((event, [low, high], moved)))
            }
            Kind::Skin | Kind::Recheck | Kind::Wrap | Kind::Nothing => {
                unreachable!("not an impact")
            }
        }
    }

    /// Moves body `index` along its velocity to `time`, wrapped into the periodic box.
    pub(super) fn move_to(&mut self, index: usize, time: f64) {
        let motion = &mut self.motions[index];
        motion.position = wrap(motion.at(time), self.period);
        motion.time = time;
    }

    /// Body `index` as the loop hands it out at `time`: moved there and wrapped into the box.
    pub(super) fn handed_out(&self, index: usize, time: f64) -> EventBody {
        EventBody {
            position: wrap(self.motions[index].at(time), self.period),
            ..self.body(index)
        }
    }
}

/// The change of `body`'s momentum from `before` (its velocity before the response) to its
/// velocity now; `None` for a body of infinite mass (its momentum is not a number).
pub(super) fn momentum_change(body: &EventBody, before: DVec3) -> Option<DVec3> {
    body.mass
        .is_finite()
        .then(|| (body.velocity - before) * body.mass)
}

/// Whether a response left an approach speed `approach` along the normal beyond rounding:
/// more than [`predict::SETTLED`] of `speeds`, the speeds before and after it (a perfectly
/// inelastic impulse leaves a few ε of those before, either way, where the normal is not
/// along an axis; a head-on one leaves nothing else).
pub(super) fn still_approaching(approach: f64, speeds: f64) -> bool {
    approach > predict::SETTLED * speeds
}
