//! Shared by the GPU tests: get a context, or skip loudly (fail with SWEEPCAST_REQUIRE_GPU=1).

use sweepcast::gpu::GpuContext;

/// The context every GPU test uses, or `None` (after a loud message) when no adapter exists
/// and `SWEEPCAST_REQUIRE_GPU` is not `1`.
#[allow(dead_code)]
pub fn gpu_context(test: &str) -> Option<GpuContext> {
    match GpuContext::new_blocking() {
        Ok(context) => {
            eprintln!("{test}: running on {}", context.describe());
            Some(context)
        }
        Err(error) => {
            if std::env::var("SWEEPCAST_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: SWEEPCAST_REQUIRE_GPU=1 but {error}");
            }
            eprintln!(
                "\n!!!!!!!! SKIPPED {test}: {error}\n!!!!!!!! GPU parity is NOT tested on this machine; set SWEEPCAST_REQUIRE_GPU=1 to make this a failure\n"
            );
            None
        }
    }
}
