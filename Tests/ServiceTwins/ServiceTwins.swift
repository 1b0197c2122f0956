// The services in memory, for tests: the stores' memory twins (each held to its PostgreSQL store by a
// contract suite), the parts and routers over them, and the gateway's router with locations-service's behind
// its hop, answering without a socket, a process or a database.
//
// They reach the services' internals with `@testable import`, which a debug build allows and a release build
// does not, so every file of this module is compiled into debug builds alone (`#if DEBUG`): the tests are
// built that way, and a release build of the whole package still succeeds, with this module empty.
