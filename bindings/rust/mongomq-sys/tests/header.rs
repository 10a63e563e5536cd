//! The header drift check: fails when `include/mongomq.h` (as installed, found by
//! build.rs with pkg-config) and this crate's declarations disagree.
//!
//! 1. Names: every `MQ_API` function, `#define MQ_*` constant, enumerator (of every
//!    `typedef enum`) and `mq_*` type of the header is declared in `src/lib.rs`, and
//!    nothing else is.
//!    Every struct of the header with fields (`mq_error`, `mq_event_attr`, the options structs) has
//!    the same fields, in the same order, in `src/lib.rs` and in this test's lists.
//! 2. Signatures and layout: a C file generated from `src/lib.rs` assigns every
//!    header function to a function pointer of the type the Rust declaration spells
//!    (compiled with -Werror, so any changed parameter, const-ness or return type
//!    fails), static-asserts every integer constant's value, each floating constant's
//!    type (`double`), the size and C type of the enums the crate spells as integers,
//!    and each struct's size, alignment, field offsets and field types as Rust sees
//!    them, links against the library (every function is exported) and runs: the
//!    library loads and reports the version pkg-config found, each floating constant
//!    prints the crate's value, and each `_INIT` macro and `_init` function gives the
//!    values of the crate's `_INIT` constant.
//!
//! Needs a C compiler: `$CC`, else `cc`.

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::mem::{align_of, offset_of, size_of};
use std::path::PathBuf;
use std::process::Command;

use mongomq_sys as sys;

const CRATE_SOURCE: &str = include_str!("../src/lib.rs");

fn header_path() -> PathBuf {
    env::split_paths(env!("MONGOMQ_SYS_INCLUDE"))
        .map(|dir| dir.join("mongomq.h"))
        .find(|p| p.is_file())
        .expect("mongomq.h in the include directories pkg-config gave")
}

fn header_text() -> String {
    strip_c_comments(&fs::read_to_string(header_path()).expect("read mongomq.h"))
}

fn strip_c_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("unterminated comment") + start + 2;
        out.push(' ');
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn strip_rust_comments(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The identifier that ends just before `text[..end]`.
fn ident_before(text: &str, end: usize) -> String {
    let head = text[..end].trim_end();
    let start = head.rfind(|c: char| !is_ident_char(c)).map_or(0, |i| i + 1);
    head[start..].to_string()
}

/// Every identifier of `text` that starts with `prefix`.
fn idents_with_prefix(text: &str, prefix: &str) -> BTreeSet<String> {
    text.split(|c: char| !is_ident_char(c)).filter(|w| w.starts_with(prefix)).map(str::to_string).collect()
}

/// The header without comments and preprocessor lines.
fn header_declarations() -> String {
    let text = header_text();
    text.lines().filter(|l| !l.trim_start().starts_with('#')).collect::<Vec<_>>().join("\n")
}

fn header_functions() -> BTreeSet<String> {
    header_declarations()
        .split(';')
        .filter(|decl| decl.contains("MQ_API"))
        .map(|decl| ident_before(decl, decl.find('(').expect("a function declaration")))
        .collect()
}

fn header_constants() -> BTreeSet<String> {
    let text = header_text();
    let mut names: BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            l.trim_start()
                .strip_prefix('#')?
                .trim_start()
                .strip_prefix("define")?
                .split_whitespace()
                .next()
                .map(str::to_string)
        })
        .filter(|n| n.starts_with("MQ_") && n != "MQ_API")
        .collect();
    // The enumerators of every `typedef enum NAME { ... }` (mq_status, mq_dedup_scope).
    let mut enums = 0;
    let mut rest = text.as_str();
    while let Some(start) = rest.find("typedef enum") {
        let end = start + rest[start..].find('}').expect("the end of an enum");
        names.extend(idents_with_prefix(&rest[start..end], "MQ_"));
        rest = &rest[end..];
        enums += 1;
    }
    assert!(enums >= 2, "found only {enums} enums (mq_status, mq_dedup_scope): the parser broke");
    names
}

fn header_types() -> BTreeSet<String> {
    // `typedef struct NAME ...`, `typedef enum NAME ...` and `typedef RET (*NAME)(...)`.
    let text = header_declarations();
    let mut names = BTreeSet::new();
    for decl in text.split("typedef").skip(1) {
        let mut words = decl.split_whitespace();
        let name = match words.next() {
            Some("struct") | Some("enum") => words.next().unwrap().to_string(),
            _ => match decl.find("(*") {
                Some(i) => decl[i + 2..].split(|c: char| !is_ident_char(c)).next().unwrap().to_string(),
                None => continue, // mq_error_size_check_: the header's static assert
            },
        };
        names.insert(name);
    }
    names
}

struct RustFn {
    name: String,
    params: Vec<String>,
    ret: Option<String>,
}

fn rust_functions() -> Vec<RustFn> {
    let src = strip_rust_comments(CRATE_SOURCE);
    // Every `extern "C" { ... }` block (the declarations follow the header's order, so
    // the options structs sit between two blocks); none holds a brace of its own.
    let mut bodies = Vec::new();
    let mut rest = src.as_str();
    while let Some(start) = rest.find("extern \"C\" {") {
        let body = &rest[start + "extern \"C\" {".len()..];
        let end = body.find('}').expect("the end of an extern block");
        bodies.push(&body[..end]);
        rest = &body[end..];
    }
    assert!(!bodies.is_empty(), "no extern block");
    bodies
        .join(";")
        .split(';')
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|d| !d.is_empty())
        .map(|d| {
            let d = d.strip_prefix("pub fn ").unwrap_or_else(|| panic!("not a `pub fn`: {d}"));
            let open = d.find('(').unwrap();
            let close = d.rfind(')').unwrap();
            let params = d[open + 1..close]
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once(':').expect("name: type").1.trim().to_string())
                .collect();
            let ret = d[close + 1..].trim().strip_prefix("->").map(|r| r.trim().to_string());
            RustFn { name: d[..open].trim().to_string(), params, ret }
        })
        .collect()
}

fn rust_constants() -> BTreeSet<String> {
    let src = strip_rust_comments(CRATE_SOURCE);
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("pub const ")?.split(':').next().map(str::to_string))
        .filter(|n| n.starts_with("MQ_"))
        .collect()
}

/// The fields (name, Rust type) of every `#[repr(C)] pub struct mq_*` with fields in
/// src/lib.rs, in declaration order.
fn rust_structs() -> Vec<(String, Vec<(String, String)>)> {
    let src = strip_rust_comments(CRATE_SOURCE);
    let mut out = Vec::new();
    let mut rest = src.as_str();
    while let Some(i) = rest.find("pub struct mq_") {
        let decl = &rest[i + "pub struct ".len()..];
        let name: String = decl.chars().take_while(|&c| is_ident_char(c)).collect();
        let open = decl.find('{').unwrap();
        let close = decl.find('}').unwrap();
        let fields = decl[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| {
                let (n, t) = f.strip_prefix("pub ").unwrap_or(f).split_once(':').expect("name: type");
                (n.trim().to_string(), t.split_whitespace().collect::<Vec<_>>().join(" "))
            })
            .collect();
        out.push((name, fields));
        rest = &decl[close..];
    }
    out
}

/// The field names of `typedef struct NAME { ... } NAME;` in the header, in order
/// (opaque handles have none and are left out).
fn header_struct_fields() -> Vec<(String, Vec<String>)> {
    let text = header_declarations();
    let mut out = Vec::new();
    for decl in text.split("typedef struct").skip(1) {
        let name: String = decl.trim_start().chars().take_while(|&c| is_ident_char(c)).collect();
        let (Some(open), Some(close)) = (decl.find('{'), decl.find('}')) else { continue };
        if decl[..open].contains(';') {
            continue; // an opaque `typedef struct mq_x mq_x;` before the next struct
        }
        let fields = decl[open + 1..close]
            .split(';')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .map(|f| {
                let f = f.split('[').next().unwrap(); // char message[504]
                f.rsplit(|c: char| !is_ident_char(c)).next().unwrap().to_string()
            })
            .collect();
        out.push((name, fields));
    }
    out
}

/// The constants whose value is a struct (the header's `_INIT` macros).
fn rust_struct_constants() -> BTreeSet<String> {
    struct_constant_values().into_iter().map(|(name, _)| name.to_string()).collect()
}

/// A value of an options field, as the C check prints it (`(double)` of a number, 1
/// or 0 for a set or NULL pointer).
trait AsNumber {
    fn as_number(&self) -> f64;
}
impl AsNumber for std::ffi::c_uint {
    fn as_number(&self) -> f64 {
        *self as f64
    }
}
impl AsNumber for std::ffi::c_int {
    fn as_number(&self) -> f64 {
        *self as f64
    }
}
impl AsNumber for usize {
    fn as_number(&self) -> f64 {
        *self as f64
    }
}
impl AsNumber for f64 {
    fn as_number(&self) -> f64 {
        *self
    }
}
impl<T> AsNumber for *const T {
    fn as_number(&self) -> f64 {
        if self.is_null() {
            0.0
        } else {
            1.0
        }
    }
}
impl<T> AsNumber for *mut T {
    fn as_number(&self) -> f64 {
        self.cast_const().as_number()
    }
}

/// (constant, [(field, value)]) of every struct constant of the crate, as Rust sees it.
fn struct_constant_values() -> Vec<(&'static str, Vec<(&'static str, f64)>)> {
    macro_rules! values {
        ($($name:ident { $($field:ident),* $(,)? })*) => {
            vec![$((stringify!($name), vec![$((stringify!($field), sys::$name.$field.as_number())),*])),*]
        };
    }
    values! {
        MQ_PUBLISH_OPTS_INIT { version, priority, not_before, dedup_key, attrs, attr_count }
        MQ_CLAIM_OPTS_INIT {
            version, worker_id, visibility_s, min_priority, max_events, timeout_s, cancel, partitions, partition_count
        }
        MQ_GROUPS_OPTS_INIT {
            version, states, id_prefix, min_attempts, held_longer_than_s, parked_beyond_s, sort, after, limit
        }
        MQ_DEAD_LIST_OPTS_INIT { version, limit, offset }
        MQ_QUEUE_OPTS_INIT { version, partitions }
    }
}

/// The Rust layout of every struct of the crate: (name, size, align, [(field, offset)]).
type Layout = (&'static str, usize, usize, Vec<(&'static str, usize)>);

fn struct_layouts() -> Vec<Layout> {
    macro_rules! layouts {
        ($($ty:ident { $($field:ident),* $(,)? })*) => {
            vec![$((
                stringify!($ty),
                size_of::<sys::$ty>(),
                align_of::<sys::$ty>(),
                vec![$((stringify!($field), offset_of!(sys::$ty, $field))),*],
            )),*]
        };
    }
    layouts! {
        mq_error { status, server_code, message }
        mq_event_attr { key, value }
        mq_publish_opts { version, priority, not_before, dedup_key, attrs, attr_count }
        mq_claim_opts {
            version, worker_id, visibility_s, min_priority, max_events, timeout_s, cancel, partitions, partition_count
        }
        mq_groups_opts {
            version, states, id_prefix, min_attempts, held_longer_than_s, parked_beyond_s, sort, after, limit
        }
        mq_dead_list_opts { version, limit, offset }
        mq_queue_opts { version, partitions }
    }
}

fn rust_types() -> BTreeSet<String> {
    let src = strip_rust_comments(CRATE_SOURCE);
    let mut names = BTreeSet::new();
    for line in src.lines().map(str::trim) {
        for prefix in ["pub type ", "pub struct "] {
            if let Some(rest) = line.strip_prefix(prefix) {
                names.insert(rest.split(|c: char| !is_ident_char(c)).next().unwrap().to_string());
            }
        }
    }
    // The opaque handles are made by the `opaque!` macro: one name per line ending in ';'.
    let start = src.find("opaque! {").expect("opaque! invocation");
    let end = start + src[start..].find('}').unwrap();
    for line in src[start..end].lines().map(str::trim) {
        if let Some(name) = line.strip_suffix(';') {
            names.insert(name.to_string());
        }
    }
    names.retain(|n| n.starts_with("mq_"));
    // mq_clock_fn is ours: the header spells mq_queue_set_clock's clock type inline.
    names.remove("mq_clock_fn");
    names
}

/// The C spelling of a Rust type of src/lib.rs.
fn c_type(rust: &str) -> String {
    let t = rust.trim();
    if let Some(inner) = t.strip_prefix("*const ") {
        return format!("{} const *", c_type(inner));
    }
    if let Some(inner) = t.strip_prefix("*mut ") {
        return format!("{} *", c_type(inner));
    }
    match t {
        "c_char" => "char".into(),
        "c_int" => "int".into(),
        "c_uint" => "unsigned int".into(),
        "c_void" => "void".into(),
        "f64" => "double".into(),
        "usize" => "size_t".into(),
        "i64" => "int64_t".into(),
        "u64" => "uint64_t".into(),
        "mq_clock_fn" => "double (*)(void *)".into(),
        t if t.starts_with("mq_") && t.chars().all(is_ident_char) => t.into(),
        t => panic!("no C spelling for the Rust type `{t}`: extend c_type()"),
    }
}

/// (name, value) of every constant of the crate, as Rust sees it.
fn constant_values() -> Vec<(&'static str, i128)> {
    macro_rules! values {
        ($($name:ident),* $(,)?) => { vec![$((stringify!($name), sys::$name as i128)),*] };
    }
    values![
        MQ_VERSION_MAJOR,
        MQ_VERSION_MINOR,
        MQ_VERSION_PATCH,
        MQ_GROUP_ID_MAX,
        MQ_WORKER_ID_MAX,
        MQ_EVENT_MAX,
        MQ_BATCH_MAX,
        MQ_PRIORITY_MIN,
        MQ_PRIORITY_MAX,
        MQ_OK,
        MQ_EMPTY,
        MQ_LEASE_LOST,
        MQ_INTERRUPTED,
        MQ_CANCELLED,
        MQ_DUPLICATE,
        MQ_ERR_ARG,
        MQ_ERR_CONNECT,
        MQ_ERR_SERVER,
        MQ_ERR_NOMEM,
        MQ_ERR_INTERNAL,
        MQ_PUBLISH_OPTS_VERSION,
        MQ_CLAIM_OPTS_VERSION,
        MQ_GROUP_READY,
        MQ_GROUP_LEASED,
        MQ_GROUP_PARKED,
        MQ_GROUP_PAUSED,
        MQ_GROUPS_SORT_ID,
        MQ_GROUPS_SORT_DUE,
        MQ_GROUPS_OPTS_VERSION,
        MQ_DEAD_LIST_OPTS_VERSION,
        MQ_DEDUP_KEY_MAX,
        MQ_DEDUP_SCOPE_QUEUE,
        MQ_DEDUP_SCOPE_GROUP,
        MQ_ATTR_MAX,
        MQ_ATTR_KEY_MAX,
        MQ_ATTR_VALUE_MAX,
        MQ_PARTITIONS_MAX,
        MQ_QUEUE_OPTS_VERSION,
    ]
}

/// (name, value) of every floating constant of the crate (a `double` in C): checked at
/// run time, exactly, since C's static assertions take integer expressions only.
fn float_constant_values() -> Vec<(&'static str, f64)> {
    macro_rules! values {
        ($($name:ident),* $(,)?) => { vec![$((stringify!($name), sys::$name)),*] };
    }
    values![MQ_DEDUP_WINDOW_DEFAULT, MQ_DEDUP_WINDOW_MIN, MQ_DEDUP_WINDOW_MAX]
}

/// (name, size, Rust type as src/lib.rs spells it) of every header enum the crate
/// spells as an integer type alias (`pub type mq_status = c_int;`): the C check wants
/// the enum compatible with that type.
fn enum_aliases() -> Vec<(&'static str, usize, String)> {
    let src = strip_rust_comments(CRATE_SOURCE);
    let alias = |name: &str| {
        let decl = format!("pub type {name} = ");
        let start = src.find(&decl).unwrap_or_else(|| panic!("no `{decl}` in src/lib.rs")) + decl.len();
        src[start..start + src[start..].find(';').unwrap()].trim().to_string()
    };
    vec![
        ("mq_status", size_of::<sys::mq_status>(), alias("mq_status")),
        ("mq_dedup_scope", size_of::<sys::mq_dedup_scope>(), alias("mq_dedup_scope")),
    ]
}

fn diff(what: &str, header: &BTreeSet<String>, rust: &BTreeSet<String>) -> Vec<String> {
    let mut problems = Vec::new();
    for missing in header.difference(rust) {
        problems.push(format!("{what} `{missing}` is in mongomq.h but not in mongomq-sys"));
    }
    for extra in rust.difference(header) {
        problems.push(format!("{what} `{extra}` is in mongomq-sys but not in mongomq.h"));
    }
    problems
}

#[test]
fn header_names_match_crate() {
    let rust_fns: BTreeSet<String> = rust_functions().into_iter().map(|f| f.name).collect();
    let header_fns = header_functions();
    assert!(header_fns.len() >= 50, "found only {} MQ_API functions: the parser broke", header_fns.len());
    let mut problems = diff("function", &header_fns, &rust_fns);
    problems.extend(diff("constant", &header_constants(), &rust_constants()));
    problems.extend(diff("type", &header_types(), &rust_types()));
    let mut listed: BTreeSet<String> = constant_values().iter().map(|(n, _)| n.to_string()).collect();
    listed.extend(float_constant_values().iter().map(|(n, _)| n.to_string()));
    listed.extend(rust_struct_constants());
    problems.extend(diff("constant (values checked by this test)", &rust_constants(), &listed));
    // Struct fields: the header's, the crate's, and the ones this test checks agree.
    let header_structs: std::collections::BTreeMap<String, Vec<String>> = header_struct_fields().into_iter().collect();
    let rust_structs: std::collections::BTreeMap<String, Vec<String>> =
        rust_structs().into_iter().map(|(name, fields)| (name, fields.into_iter().map(|(f, _)| f).collect())).collect();
    let checked: std::collections::BTreeMap<String, Vec<String>> = struct_layouts()
        .into_iter()
        .map(|(name, _, _, fields)| (name.to_string(), fields.iter().map(|(f, _)| f.to_string()).collect()))
        .collect();
    for (what, other) in [("mongomq-sys", &rust_structs), ("this test's layout list", &checked)] {
        if &header_structs != other {
            problems.push(format!("struct fields differ: mongomq.h {header_structs:?}, {what} {other:?}"));
        }
    }
    assert!(problems.is_empty(), "header and crate disagree:\n  {}", problems.join("\n  "));
}

#[test]
fn header_signatures_and_layout_match_crate() {
    let mut c = String::from("#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <mongomq.h>\n\n");
    let mut assert = |cond: String, what: &str| c.push_str(&format!("_Static_assert({cond}, \"{what}\");\n"));
    let rust_types: std::collections::BTreeMap<String, Vec<(String, String)>> = rust_structs().into_iter().collect();
    for (name, size, align, fields) in struct_layouts() {
        assert(format!("sizeof({name}) == {size}"), &format!("sizeof({name})"));
        assert(format!("_Alignof({name}) == {align}"), &format!("alignof({name})"));
        for (field, offset) in &fields {
            assert(format!("offsetof({name}, {field}) == {offset}"), &format!("offsetof({name}, {field})"));
        }
        for (field, rust_type) in &rust_types[name] {
            if let Some(array) = rust_type.strip_prefix('[') {
                let (elem, len) = array.trim_end_matches(']').split_once(';').expect("[T; N]");
                let (elem, len) = (c_type(elem), len.trim());
                assert(
                    format!("sizeof((({name} *)0)->{field}) == {len} * sizeof({elem})"),
                    &format!("{name}.{field}: {rust_type}"),
                );
            } else {
                let c = c_type(rust_type);
                assert(
                    format!("_Generic((({name} *)0)->{field}, {c}: 1, default: 0)"),
                    &format!("{name}.{field}: {rust_type}"),
                );
            }
        }
    }
    for (name, size, rust_type) in enum_aliases() {
        assert(format!("sizeof({name}) == {size}"), &format!("sizeof({name})"));
        let c = c_type(&rust_type);
        assert(format!("_Generic(({name})0, {c}: 1, default: 0)"), &format!("{name}: {rust_type}"));
    }
    for (name, value) in constant_values() {
        assert(format!("{name} == {value}"), name);
    }
    for (name, _) in float_constant_values() {
        assert(format!("_Generic(({name}), double: 1, default: 0)"), &format!("{name}: f64"));
    }
    let functions = rust_functions();
    for f in &functions {
        let params = if f.params.is_empty() {
            "void".to_string()
        } else {
            f.params.iter().map(|p| c_type(p)).collect::<Vec<_>>().join(", ")
        };
        let ret = f.ret.as_deref().map_or("void".to_string(), c_type);
        c.push_str(&format!("{ret} (*const check_{name})({params}) = {name};\n", name = f.name));
    }
    // main prints the version, then each floating constant (`NAME=value`), then each
    // struct constant's fields as the C macro and the _init function give them:
    // `NAME.field=value` and `NAME()init.field=value`.
    c.push_str("\nint main(void) {\n    printf(\"%s\\n\", mq_version());\n");
    for (name, _) in float_constant_values() {
        c.push_str(&format!("    printf(\"{name}=%.17g\\n\", {name});\n"));
    }
    for (name, fields) in struct_constant_values() {
        let ty = name.strip_suffix("_INIT").unwrap().to_lowercase(); // mq_claim_opts
        let version = format!("{}_VERSION", name.strip_suffix("_INIT").unwrap());
        c.push_str(&format!(
            "    {{\n        {ty} m = {name}, f;\n        if ({ty}_init(&f, {version}) != MQ_OK) return 2;\n"
        ));
        for (field, _) in &fields {
            let number = |v: &str| {
                if rust_types[&ty].iter().any(|(f, t)| f == field && t.starts_with('*')) {
                    format!("({v}.{field} ? 1.0 : 0.0)")
                } else {
                    format!("(double){v}.{field}")
                }
            };
            c.push_str(&format!(
                "        printf(\"{name}.{field}=%.17g\\n{name}()init.{field}=%.17g\\n\", {}, {});\n",
                number("m"),
                number("f")
            ));
        }
        c.push_str("    }\n");
    }
    c.push_str("    return 0;\n}\n");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("header-check");
    fs::create_dir_all(&dir).unwrap();
    let source = dir.join("check.c");
    let exe = dir.join("check");
    fs::write(&source, &c).unwrap();

    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut cmd = Command::new(&cc);
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic-errors"]);
    for dir in env::split_paths(env!("MONGOMQ_SYS_INCLUDE")) {
        cmd.arg("-I").arg(dir);
    }
    cmd.arg(&source).arg("-o").arg(&exe);
    let link_dirs: Vec<PathBuf> = env::split_paths(env!("MONGOMQ_SYS_LINK")).collect();
    for dir in &link_dirs {
        cmd.arg("-L").arg(dir);
    }
    cmd.arg("-lmongomq");
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    assert!(
        out.status.success(),
        "header and crate disagree: {} failed on {}:\n{}",
        cc,
        source.display(),
        String::from_utf8_lossy(&out.stderr)
    );

    let mut run = Command::new(&exe);
    let mut ld = link_dirs.clone();
    if let Some(old) = env::var_os("LD_LIBRARY_PATH") {
        ld.extend(env::split_paths(&old));
    }
    run.env("LD_LIBRARY_PATH", env::join_paths(ld).unwrap());
    let out = run.output().expect("run the header check");
    assert!(out.status.success(), "the header check program failed: {:?}", out);
    let printed = String::from_utf8(out.stdout).unwrap();
    let mut lines = printed.lines();
    assert_eq!(lines.next().map(str::trim), Some(env!("MONGOMQ_SYS_VERSION")), "the C program's mq_version()");
    let c_values: std::collections::BTreeMap<&str, f64> = lines
        .map(|l| {
            let (k, v) = l.split_once('=').expect("NAME.field=value");
            (k, v.parse::<f64>().expect("a number"))
        })
        .collect();
    for (name, rust) in float_constant_values() {
        assert_eq!(c_values.get(name), Some(&rust), "{name}: C's value and mongomq-sys's");
    }
    for (name, fields) in struct_constant_values() {
        for (field, rust) in fields {
            for key in [format!("{name}.{field}"), format!("{name}()init.{field}")] {
                assert_eq!(c_values.get(key.as_str()), Some(&rust), "{key}: C's value and mongomq-sys's {name}");
            }
        }
    }
}

#[test]
fn library_version_matches_crate() {
    // SAFETY: mq_version takes nothing and returns a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(sys::mq_version()) };
    let version = version.to_str().unwrap();
    let major_minor = |v: &str| v.split('.').take(2).collect::<Vec<_>>().join(".");
    assert_eq!(major_minor(version), major_minor(env!("CARGO_PKG_VERSION")));
    assert_eq!(
        (sys::MQ_VERSION_MAJOR, sys::MQ_VERSION_MINOR),
        (0, 8),
        "the crate's header constants are those of libmongomq 0.8"
    );
}

#[test]
fn parser_sees_drift() {
    // The check above must be able to fail: a header with one more function, and a
    // Rust declaration with a changed parameter, are both reported.
    let mut header = header_functions();
    header.insert("mq_new_call".into());
    let rust: BTreeSet<String> = rust_functions().into_iter().map(|f| f.name).collect();
    assert_eq!(diff("function", &header, &rust), vec!["function `mq_new_call` is in mongomq.h but not in mongomq-sys"]);
    assert_eq!(c_type("*mut *mut mq_lease"), "mq_lease * *");
    assert_eq!(c_type("*const c_char"), "char const *");
    // Enumerators are read from every enum, not only mq_status's.
    let constants = header_constants();
    for name in
        ["MQ_DUPLICATE", "MQ_DEDUP_SCOPE_GROUP", "MQ_DEDUP_WINDOW_MAX", "MQ_ATTR_VALUE_MAX", "MQ_PARTITIONS_MAX"]
    {
        assert!(constants.contains(name), "{name} not among the header's constants");
    }
}

#[test]
fn options_init_matches_crate_constants() {
    // The _init functions (what an FFI caller without the macros uses) fill what the
    // crate's _INIT constants hold; a version the library does not know is MQ_ERR_ARG.
    let key = b"k\0";
    let attr = sys::mq_event_attr { key: key.as_ptr().cast(), value: key.as_ptr().cast() };
    let filled = sys::mq_publish_opts {
        version: 0,
        priority: 7,
        not_before: 9.0,
        dedup_key: key.as_ptr().cast(),
        attrs: &attr,
        attr_count: 1,
    };
    let mut publish = filled;
    // SAFETY: publish is a valid, writable mq_publish_opts.
    assert_eq!(unsafe { sys::mq_publish_opts_init(&mut publish, sys::MQ_PUBLISH_OPTS_VERSION) }, sys::MQ_OK);
    assert_eq!(publish, sys::MQ_PUBLISH_OPTS_INIT);
    // Versions 1 (before dedup_key) and 2 (before attrs) are still versions the
    // library knows, and it writes only the fields they have: a struct of theirs ends
    // before the later fields.
    publish = filled;
    // SAFETY: as above.
    assert_eq!(unsafe { sys::mq_publish_opts_init(&mut publish, 1) }, sys::MQ_OK);
    assert_eq!((publish.version, publish.priority, publish.not_before), (1, 0, 0.0));
    assert_eq!((publish.dedup_key, publish.attrs, publish.attr_count), (filled.dedup_key, filled.attrs, 1));
    publish = filled;
    // SAFETY: as above.
    assert_eq!(unsafe { sys::mq_publish_opts_init(&mut publish, 2) }, sys::MQ_OK);
    assert_eq!((publish.version, publish.priority, publish.not_before), (2, 0, 0.0));
    assert!(publish.dedup_key.is_null());
    assert_eq!((publish.attrs, publish.attr_count), (filled.attrs, 1));
    let parts = [1, 2];
    let mut claim = sys::MQ_CLAIM_OPTS_INIT;
    claim.visibility_s = 1.0;
    claim.max_events = 9;
    claim.partitions = parts.as_ptr();
    claim.partition_count = 2;
    // SAFETY: claim is a valid, writable mq_claim_opts.
    assert_eq!(unsafe { sys::mq_claim_opts_init(&mut claim, sys::MQ_CLAIM_OPTS_VERSION) }, sys::MQ_OK);
    assert_eq!(claim, sys::MQ_CLAIM_OPTS_INIT);
    // Version 1 (before partitions) is still known, and the library writes only its
    // fields: a version 1 struct ends before them.
    claim.max_events = 9;
    claim.partitions = parts.as_ptr();
    claim.partition_count = 2;
    // SAFETY: as above.
    assert_eq!(unsafe { sys::mq_claim_opts_init(&mut claim, 1) }, sys::MQ_OK);
    assert_eq!((claim.version, claim.max_events), (1, 1));
    assert_eq!((claim.partitions, claim.partition_count), (parts.as_ptr(), 2));
    let mut queue = sys::mq_queue_opts { version: 0, partitions: 7 };
    // SAFETY: queue is a valid, writable mq_queue_opts.
    assert_eq!(unsafe { sys::mq_queue_opts_init(&mut queue, sys::MQ_QUEUE_OPTS_VERSION) }, sys::MQ_OK);
    assert_eq!(queue, sys::MQ_QUEUE_OPTS_INIT);
    for version in [0, sys::MQ_QUEUE_OPTS_VERSION + 1] {
        // SAFETY: queue is a valid, writable mq_queue_opts.
        assert_eq!(unsafe { sys::mq_queue_opts_init(&mut queue, version) }, sys::MQ_ERR_ARG, "version {version}");
    }
    let mut groups = sys::MQ_GROUPS_OPTS_INIT;
    groups.states = sys::MQ_GROUP_PAUSED;
    groups.limit = 7;
    // SAFETY: groups is a valid, writable mq_groups_opts.
    assert_eq!(unsafe { sys::mq_groups_opts_init(&mut groups, sys::MQ_GROUPS_OPTS_VERSION) }, sys::MQ_OK);
    assert_eq!(groups, sys::MQ_GROUPS_OPTS_INIT);
    let mut dead = sys::mq_dead_list_opts { version: 0, limit: 3, offset: 9 };
    // SAFETY: dead is a valid, writable mq_dead_list_opts.
    assert_eq!(unsafe { sys::mq_dead_list_opts_init(&mut dead, sys::MQ_DEAD_LIST_OPTS_VERSION) }, sys::MQ_OK);
    assert_eq!(dead, sys::MQ_DEAD_LIST_OPTS_INIT);
    // 0, and the version after each struct's own, are versions the library does not know.
    for version in [0, sys::MQ_GROUPS_OPTS_VERSION + 1] {
        // SAFETY: groups is a valid, writable mq_groups_opts.
        assert_eq!(unsafe { sys::mq_groups_opts_init(&mut groups, version) }, sys::MQ_ERR_ARG, "version {version}");
    }
    for version in [0, sys::MQ_DEAD_LIST_OPTS_VERSION + 1] {
        // SAFETY: dead is a valid, writable mq_dead_list_opts.
        assert_eq!(unsafe { sys::mq_dead_list_opts_init(&mut dead, version) }, sys::MQ_ERR_ARG, "version {version}");
    }
    for version in [0, sys::MQ_CLAIM_OPTS_VERSION + 1] {
        // SAFETY: claim is a valid, writable mq_claim_opts.
        assert_eq!(unsafe { sys::mq_claim_opts_init(&mut claim, version) }, sys::MQ_ERR_ARG, "version {version}");
    }
    for version in [0, sys::MQ_PUBLISH_OPTS_VERSION + 1] {
        // SAFETY: publish is a valid, writable mq_publish_opts.
        assert_eq!(unsafe { sys::mq_publish_opts_init(&mut publish, version) }, sys::MQ_ERR_ARG, "version {version}");
    }
}
