//! No adapter is a typed error whose message says how to get one. Alone in its own test
//! binary because it changes the process environment.

use sweepcast::Error;
use sweepcast::gpu::GpuContext;

#[test]
fn no_matching_adapter_is_a_typed_error_that_says_what_to_do() {
    // SAFETY: this binary has one test, so no other thread reads the environment meanwhile.
    unsafe { std::env::set_var("WGPU_ADAPTER_NAME", "no such adapter, sweepcast test") };
    match GpuContext::new_blocking() {
        Err(error @ Error::NoAdapter { .. }) => {
            let message = error.to_string();
            assert!(message.contains("mesa-vulkan-drivers"), "{message}");
            assert!(
                message.contains("no such adapter, sweepcast test"),
                "{message}"
            );
        }
        other => panic!("expected NoAdapter, got {:?}", other.map(|c| c.describe())),
    }
    // A backend this platform lacks leaves no adapter at all.
    // SAFETY: as above.
    unsafe {
        std::env::remove_var("WGPU_ADAPTER_NAME");
        std::env::set_var("WGPU_BACKEND", "metal");
    }
    match GpuContext::new_blocking() {
        Err(error @ Error::NoAdapter { .. }) => {
            assert!(error.to_string().contains("apt-get install"), "{error}");
        }
        other => panic!("expected NoAdapter, got {:?}", other.map(|c| c.describe())),
    }
}
