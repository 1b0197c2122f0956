import Testing

/// The gateway's scenarios that bound a wait against the wall clock on real sockets and processes: a
/// normal client served within a second among slow ones, a stopped service's 503 within 2 s, every refusal
/// within 2.5 s while the database is away, a hide reaching every open stream within a second, a disabled
/// account refused on every replica within 2 s. Each test stays in the file of what it tests, in an
/// extension of this suite; `scripts/test.sh` runs the suite one test at a time after the parallel phase,
/// on a machine no other test is loading.
@Suite(.serialized) struct TimedGatewayTests {}
