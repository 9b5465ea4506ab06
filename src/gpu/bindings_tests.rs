//! Each entry point's binding table against naga's reflection of its shader, with no GPU:
//! the bindings a stage lays out and binds are exactly those the entry point uses, with the
//! access its shader declares. Otherwise the device rejects the pipeline (a binding the
//! shader uses but the table lacks, or a read-only one the shader writes), which only a test
//! with a GPU would notice, or the entry point binds a buffer for nothing, of the 8 storage
//! buffers wgpu's default limits allow it.

use std::collections::BTreeMap;

use naga::valid::{Capabilities, ValidationFlags, Validator};

use super::kernel::{Access, Shader};

/// Every list of entry points a stage builds from.
const SHADERS: [&Shader; 5] = [
    &super::sweep::SWEEP_SHADER,
    &super::walls::WALLS_SHADER,
    &super::contacts::CONTACTS_SHADER,
    &super::grid::GRID_SHADER,
    &super::frame::FRAME_SHADER,
];

/// The `(binding, access)` of each global of `module` that its entry point number `index`
/// uses.
fn used_bindings(
    module: &naga::Module,
    info: &naga::valid::ModuleInfo,
    index: usize,
) -> Result<BTreeMap<u32, Access>, String> {
    let uses = info.get_entry_point(index);
    let mut used = BTreeMap::new();
    for (handle, global) in module.global_variables.iter() {
        let Some(binding) = &global.binding else {
            continue;
        };
        if uses[handle].is_empty() {
            continue;
        }
        let name = global.name.as_deref().unwrap_or("?");
        if binding.group != 0 {
            return Err(format!(
                "`{name}` is in group {}, and a kernel binds group 0 only",
                binding.group
            ));
        }
        let access = match global.space {
            naga::AddressSpace::Uniform => Access::Uniform,
            naga::AddressSpace::Storage { access }
                if access.contains(naga::StorageAccess::STORE) =>
            {
                Access::Write
            }
            naga::AddressSpace::Storage { .. } => Access::Read,
            space => return Err(format!("`{name}` is in {space:?}, not a buffer")),
        };
        used.insert(binding.binding, access);
    }
    Ok(used)
}

/// What is wrong with the table of the entry point named `name`, given the bindings it
/// `used`.
fn mismatches(name: &str, table: &[(u32, Access)], used: &BTreeMap<u32, Access>) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut listed = BTreeMap::new();
    for &(binding, access) in table {
        if listed.insert(binding, access).is_some() {
            wrong.push(format!("{name}: binding {binding} is listed twice"));
        }
    }
    for (&binding, &access) in used {
        match listed.get(&binding) {
            None => wrong.push(format!(
                "{name}: binding {binding} ({access:?}) is used by the shader but not in the table"
            )),
            Some(&listed) if listed != access => wrong.push(format!(
                "{name}: binding {binding} is {listed:?} in the table but {access:?} in the shader"
            )),
            Some(_) => {}
        }
    }
    for (&binding, &access) in &listed {
        if !used.contains_key(&binding) {
            wrong.push(format!(
                "{name}: binding {binding} ({access:?}) is in the table but unused by the shader"
            ));
        }
    }
    wrong
}

#[test]
fn binding_tables_match_the_shaders() {
    let mut wrong = Vec::new();
    for shader in SHADERS {
        let file = shader.file;
        let module = naga::front::wgsl::parse_str(shader.source).unwrap_or_else(|error| {
            panic!("{}", error.emit_to_string_with_path(shader.source, file))
        });
        let info = Validator::new(ValidationFlags::all(), Capabilities::empty())
            .validate(&module)
            .unwrap_or_else(|error| {
                panic!("{}", error.emit_to_string_with_path(shader.source, file))
            });
        for &(name, table) in shader.entry_points {
            let Some(index) = module
                .entry_points
                .iter()
                .position(|entry| entry.name == name)
            else {
                wrong.push(format!("{file}: no entry point {name}"));
                continue;
            };
            match used_bindings(&module, &info, index) {
                Ok(used) => wrong.extend(
                    mismatches(name, table, &used)
                        .into_iter()
                        .map(|line| format!("{file}: {line}")),
                ),
                Err(error) => wrong.push(format!("{file}: {name}: {error}")),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "binding tables that differ from their shaders:\n{}",
        wrong.join("\n")
    );
}

/// The check names each kind of difference: a binding used but unlisted, one listed but
/// unused, one of the wrong access, one listed twice.
#[test]
fn mismatches_name_each_difference() {
    use Access::{Read, Uniform, Write};
    let table = [(0, Read), (1, Write), (2, Uniform), (0, Read)];
    let used = BTreeMap::from([(0, Read), (1, Read), (3, Write)]);
    assert_eq!(
        mismatches("entry", &table, &used),
        [
            "entry: binding 0 is listed twice",
            "entry: binding 1 is Write in the table but Read in the shader",
            "entry: binding 3 (Write) is used by the shader but not in the table",
            "entry: binding 2 (Uniform) is in the table but unused by the shader",
        ]
    );
}
