//! A body's earliest impact on a wall (a [`Contact`](crate::Contact) with a wall), as both
//! steps and
//! [`earliest_wall_contacts`](super::earliest_wall_contacts) make them with: the walls'
//! records, checked, and the walls shader's twin on every body in parallel.

use crate::par::prelude::*;

use super::walls;
use crate::contact_step::Contact;
use crate::error::Error;
use crate::geometry::Partner;
use crate::geometry::Wall;
use crate::layout::{BodyRecord, WallContactRecord, WallParams, WallRecord};
use crate::options::SweepOptions;

/// Validates `walls` and writes their records into `records`.
///
/// # Errors
/// [`Error::InvalidWall`] for a bad wall, or more walls than `u32` indices name.
pub(crate) fn wall_records_into(
    walls: &[Wall],
    records: &mut Vec<WallRecord>,
) -> Result<(), Error> {
    crate::validate::validate_walls(walls)?;
    if u32::try_from(walls.len()).is_err() {
        return Err(Error::InvalidWall {
            wall: u32::MAX as usize,
            reason: "more walls than 32-bit indices name; split them",
        });
    }
    records.clear();
    records.extend(walls.iter().map(WallRecord::from));
    Ok(())
}

/// Each of `bodies`' earliest impact on `walls`, by the twin's entry point on each body, in
/// parallel, into `contacts`.
pub(crate) fn wall_contacts_into(
    bodies: &[BodyRecord],
    walls: &[WallRecord],
    options: &SweepOptions,
    contacts: &mut Vec<Option<Contact>>,
) {
    // One body a call of the entry point: the parameters say one body, and every wall.
    let params = WallParams::new(options, 1, walls.len() as u32);
    bodies
        .par_iter()
        .enumerate()
        .map(|(index, body)| {
            let mut contact = [WallContactRecord::default()];
            walls::main(0, std::slice::from_ref(body), walls, &mut contact, &params);
            wall_contact(&contact[0], index as u32, body)
        })
        .collect_into_vec(contacts);
}

/// The contact of body `index`'s record from the walls stage (or its twin), `None` for a
/// miss.
pub(crate) fn wall_contact(
    record: &WallContactRecord,
    index: u32,
    body: &BodyRecord,
) -> Option<Contact> {
    record
        .impact
        .to_impact(body, &BodyRecord::default())
        .map(|impact| Contact {
            body: index,
            partner: Partner::Wall { index: record.wall },
            impact,
        })
}
