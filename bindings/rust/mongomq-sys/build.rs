//! Finds libmongomq with pkg-config and checks that its version is one this crate's
//! declarations were written for: the same major.minor as the crate (0.x minors are
//! not compatible with each other), at least the crate's patch.
//!
//! Exposes to dependent build scripts (links = "mongomq"): DEP_MONGOMQ_INCLUDE (the
//! include directories, joined with the platform's path separator) and
//! DEP_MONGOMQ_VERSION. The crate's own tests get the same as MONGOMQ_SYS_INCLUDE,
//! MONGOMQ_SYS_LINK and MONGOMQ_SYS_VERSION (the header drift check needs them).

use std::env;

fn main() {
    let crate_version = env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let mut parts = crate_version.split(['.', '-', '+']);
    let major: u64 = parts.next().and_then(|p| p.parse().ok()).expect("crate major version");
    let minor: u64 = parts.next().and_then(|p| p.parse().ok()).expect("crate minor version");
    let lowest = crate_version.split(['-', '+']).next().unwrap().to_string();
    let above = if major == 0 { format!("0.{}.0", minor + 1) } else { format!("{}.0.0", major + 1) };

    let lib = match pkg_config::Config::new().range_version(lowest.as_str()..above.as_str()).probe("mongomq") {
        Ok(lib) => lib,
        Err(e) => panic!(
            "\n\nmongomq-sys {crate_version} needs libmongomq >= {lowest}, < {above}, found \
             with pkg-config (mongomq.pc).\nInstall libmongomq, or point PKG_CONFIG_PATH at \
             the directory holding its mongomq.pc (PREFIX/lib/pkgconfig).\n\n{e}\n"
        ),
    };

    let join = |paths: &[std::path::PathBuf]| {
        env::join_paths(paths)
            .expect("pkg-config paths contain no separator")
            .into_string()
            .expect("pkg-config paths are UTF-8")
    };
    let include = join(&lib.include_paths);
    let link = join(&lib.link_paths);
    println!("cargo:include={include}");
    println!("cargo:version={}", lib.version);
    println!("cargo:rustc-env=MONGOMQ_SYS_INCLUDE={include}");
    println!("cargo:rustc-env=MONGOMQ_SYS_LINK={link}");
    println!("cargo:rustc-env=MONGOMQ_SYS_VERSION={}", lib.version);
    println!("cargo:rerun-if-changed=build.rs");
}
