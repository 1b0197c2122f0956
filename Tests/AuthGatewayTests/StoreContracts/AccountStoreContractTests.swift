import Foundation
import OnTheMapShared
import ServiceKit
import Testing

@testable import AuthGateway
@testable import ServiceTwins

/// What `AccountStore` decides, the same in PostgreSQL and in memory: who has an account, by which address
/// or identity, whether it may log in, and what is left of it once erased.
@Suite struct AccountStoreContractTests {
    static let hour = Duration.seconds(3600)

    static func ada(_ stores: GatewayStores, typed: String = "Ada@Example.com") async throws -> Account {
        try await stores.accounts.createLocal(email: EmailAddress(typed), passwordHash: "hash-of-ada", firstName: "Ada", lastName: "Lovelace")
    }

    static let jarrod = Account(key: "3903878747", provider: "udacity", email: "Jarrod@Example.com", firstName: "Jarrod", lastName: "Parkes")

    static let google = ExternalIdentity(
        provider: "oidc", issuer: "https://accounts.example.com", subject: "110169484474386276334", email: "grace@example.com",
        firstName: "Grace", lastName: "Hopper")

    @Test(arguments: GatewayStoresKind.allCases)
    func aNewLocalAccountIsFoundByItsAddressKeyWithItsPasswordHash(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores, typed: "  Ada@Example.com ")
            #expect(ada.provider == "local")
            #expect(ada.email == "Ada@Example.com", "the address is kept as typed, trimmed")
            #expect(ada.key.count == 10 && ada.key.allSatisfy(\.isNumber), "a key shaped as Udacity's: \(ada.key)")
            let found = try #require(try await stores.accounts.local(emailKey: "ada@example.com"))
            #expect(found.account == ada)
            #expect(found.passwordHash == "hash-of-ada")
            #expect(try await stores.accounts.account(key: ada.key) == ada)
        }
    }

    /// The gateway normalises an address once (`EmailAddress.key`); a store that normalised it again, a
    /// different way, would find accounts the login did not mean.
    @Test(arguments: GatewayStoresKind.allCases)
    func anAddressIsLookedUpByTheGatewaysKeyAsGiven(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            _ = try await Self.ada(stores)
            #expect(try await stores.accounts.local(emailKey: "Ada@Example.com") == nil)
            #expect(try await stores.accounts.local(emailKey: " ada@example.com") == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aSecondLocalAccountWithTheSameAddressInAnyCaseOrFormIsRefused(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            await #expect(throws: AccountStoreError.emailTaken) { try await Self.ada(stores, typed: "ADA@example.COM") }
            let composed = try await stores.accounts.createLocal(
                email: EmailAddress("\u{E9}lodie@example.com"), passwordHash: "h", firstName: "\u{C9}lodie", lastName: "D")
            await #expect(throws: AccountStoreError.emailTaken) {
                try await stores.accounts.createLocal(
                    email: EmailAddress("E\u{301}lodie@example.com"), passwordHash: "h", firstName: "E", lastName: "D")
            }
            #expect(try await stores.accounts.local(emailKey: "ada@example.com")?.account == ada, "the first account is unchanged")
            #expect(try await stores.accounts.local(emailKey: "\u{E9}lodie@example.com")?.account == composed)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anUnknownAddressOrKeyFindsNoAccount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            _ = try await Self.ada(stores)
            #expect(try await stores.accounts.local(emailKey: "nobody@example.com") == nil)
            #expect(try await stores.accounts.account(key: "1000000000") == nil)
            // A key from a request path is any text; PostgreSQL refuses a NUL in text, which must not be a fault.
            #expect(try await stores.accounts.account(key: "1000\u{0}000") == nil)
        }
    }

    /// The address of a local account is unique among local accounts only: another provider's account is a
    /// copy of what that provider says, and has no password here.
    @Test(arguments: GatewayStoresKind.allCases)
    func anIdentityProvidersAccountHasNoPasswordAndLeavesItsAddressFreeForALocalOne(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            try await stores.accounts.upsertExternal(Self.jarrod)
            #expect(try await stores.accounts.account(key: Self.jarrod.key) == Self.jarrod)
            #expect(try await stores.accounts.local(emailKey: "jarrod@example.com") == nil)
            let local = try await stores.accounts.createLocal(
                email: EmailAddress("jarrod@example.com"), passwordHash: "h", firstName: "Jarrod", lastName: "Local")
            #expect(local.key != Self.jarrod.key)
            #expect(try await stores.accounts.local(emailKey: "jarrod@example.com")?.account == local)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anIdentityProvidersAccountTakesTheNamesAndAddressOfItsLatestLogin(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            try await stores.accounts.upsertExternal(Self.jarrod)
            var renamed = Self.jarrod
            renamed.provider = "another"
            renamed.email = "jp@example.com"
            renamed.firstName = "J."
            renamed.lastName = "P."
            try await stores.accounts.upsertExternal(renamed)
            let stored = try #require(try await stores.accounts.account(key: Self.jarrod.key))
            #expect(stored.email == "jp@example.com")
            #expect(stored.firstName == "J.")
            #expect(stored.lastName == "P.")
            #expect(stored.provider == "udacity", "the provider that added the account stays its provider")
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anExternalIdentitySignsInToOneAccountWhichTakesItsLatestNames(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let first = try await stores.accounts.signedIn(Self.google)
            #expect(first.provider == "oidc")
            #expect(first.email == "grace@example.com")
            #expect(try await stores.accounts.account(key: first.key) == first)

            var renamed = Self.google
            renamed.email = "admiral@example.com"
            renamed.lastName = "Murray Hopper"
            let again = try await stores.accounts.signedIn(renamed)
            #expect(again.key == first.key)
            #expect(again.lastName == "Murray Hopper")
            #expect(try await stores.accounts.account(key: first.key) == again)
        }
    }

    /// The groups come with every way the account is read: by key, by a session, by an operator's switch.
    @Test(arguments: GatewayStoresKind.allCases)
    func anExternalIdentitysGroupsAreKeptWithItsAccountAndEachSignInReplacesThem(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            var teacher = Self.google
            teacher.groups = ["staff", "teachers"]
            let first = try await stores.accounts.signedIn(teacher)
            #expect(first.groups == ["staff", "teachers"])
            #expect(try await stores.accounts.account(key: first.key) == first)
            let (session, _) = try await stores.sessions.create(for: first, lifetime: Self.hour)
            #expect(try await stores.sessions.account(tokenHash: session.hash)?.account == first)
            #expect(try await stores.sessions.liveSessions(tokenHashes: [session.hash.hexString])[session.hash.hexString]?.account == first)

            // The provider moved her: the next sign-in's groups are hers, none of the old ones kept.
            teacher.groups = ["year-9"]
            let moved = try await stores.accounts.signedIn(teacher)
            #expect(moved.key == first.key)
            #expect(try await stores.accounts.account(key: first.key)?.groups == ["year-9"])
            #expect(try await stores.sessions.account(tokenHash: session.hash)?.account.groups == ["year-9"])
            #expect(try await stores.accounts.disable(emailKey: "grace@example.com", by: "ops", reason: nil) == .done(moved))

            teacher.groups = []
            #expect(try await stores.accounts.signedIn(teacher).groups.isEmpty)
            #expect(try await stores.accounts.account(key: first.key)?.groups.isEmpty == true)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func localAndOtherProvidersAccountsHaveNoGroups(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            #expect(ada.groups.isEmpty)
            #expect(try await stores.accounts.local(emailKey: "ada@example.com")?.account.groups.isEmpty == true)
            var jarrod = Self.jarrod
            jarrod.groups = ["teachers"]
            try await stores.accounts.upsertExternal(jarrod)
            #expect(try await stores.accounts.account(key: jarrod.key) == Self.jarrod, "only an OpenID Connect sign-in names groups")
        }
    }

    /// The groups live in the account alone: whoever signs in after the erasure starts with none of them.
    @Test(arguments: GatewayStoresKind.allCases)
    func anErasedAccountsGroupsGoWithIt(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            var teacher = Self.google
            teacher.groups = ["teachers"]
            let grace = try await stores.accounts.signedIn(teacher)
            try await stores.accounts.beginErasure(key: grace.key)
            try await stores.accounts.finishErasure(key: grace.key)
            #expect(try await stores.accounts.account(key: grace.key) == nil)
            let again = try await stores.accounts.signedIn(Self.google)
            #expect(again.key != grace.key)
            #expect(try await stores.accounts.account(key: again.key)?.groups.isEmpty == true)
        }
    }

    /// A subject is the person only at its issuer: the same subject at another issuer is someone else.
    @Test(arguments: GatewayStoresKind.allCases)
    func theSameSubjectAtAnotherIssuerIsAnotherAccount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let first = try await stores.accounts.signedIn(Self.google)
            var elsewhere = Self.google
            elsewhere.issuer = "https://login.example.org"
            var otherSubject = Self.google
            otherSubject.subject = "110169484474386276335"
            let second = try await stores.accounts.signedIn(elsewhere)
            let third = try await stores.accounts.signedIn(otherSubject)
            #expect(Set([first.key, second.key, third.key]).count == 3)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func disablingAnAccountEndsEveryOneOfItsSessionsAndNoOneElses(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let bob = try await stores.accounts.createLocal(
                email: EmailAddress("bob@example.com"), passwordHash: "h", firstName: "Bob", lastName: "B")
            let (phone, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let (laptop, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            let (bobs, _) = try await stores.sessions.create(for: bob, lifetime: Self.hour)

            // An operator names the account by its address, spelled any way: the command line keys it.
            #expect(try await stores.accounts.disable(emailKey: EmailAddress(" ada@EXAMPLE.com").key, by: "ops", reason: "spam") == .done(ada))
            #expect(try await stores.sessions.account(tokenHash: phone.hash) == nil)
            #expect(try await stores.sessions.account(tokenHash: laptop.hash) == nil)
            let live = try await stores.sessions.liveSessions(tokenHashes: [phone, laptop, bobs].map(\.hash.hexString))
            #expect(Array(live.keys) == [bobs.hash.hexString])
            #expect(try await stores.sessions.account(tokenHash: bobs.hash)?.account == bob)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aDisabledAccountCannotOpenASession(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            _ = try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil)
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: ada, lifetime: Self.hour) }
            // Its password hash is still found: only the right password learns that the account is disabled.
            #expect(try await stores.accounts.local(emailKey: "ada@example.com")?.account == ada)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func disablingOrEnablingTwiceSaysItWasSoAlready(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            #expect(try await stores.accounts.enable(emailKey: "ada@example.com") == .already(ada))
            #expect(try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: "spam") == .done(ada))
            #expect(try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil) == .already(ada))
            #expect(try await stores.accounts.enable(emailKey: "ada@example.com") == .done(ada))
            #expect(try await stores.accounts.enable(emailKey: "ada@example.com") == .already(ada))
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anEnabledAccountOpensNewSessionsButThoseItsDisablingEndedStayEnded(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (old, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            _ = try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil)
            _ = try await stores.accounts.enable(emailKey: "ada@example.com")
            #expect(try await stores.sessions.account(tokenHash: old.hash) == nil)
            let (fresh, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            #expect(try await stores.sessions.account(tokenHash: fresh.hash)?.account == ada)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func disablingOrEnablingAnAddressNobodyHasFindsNoAccount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            _ = try await Self.ada(stores)
            #expect(try await stores.accounts.disable(emailKey: "nobody@example.com", by: "ops", reason: nil) == .noAccount)
            #expect(try await stores.accounts.enable(emailKey: "nobody@example.com") == .noAccount)
        }
    }

    /// Another provider's accounts keep the address as the provider spelled it; the operator's key still finds them.
    @Test(arguments: GatewayStoresKind.allCases)
    func anIdentityProvidersAccountIsDisabledByItsAddressInAnyCase(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            try await stores.accounts.upsertExternal(Self.jarrod)
            #expect(try await stores.accounts.disable(emailKey: EmailAddress("jarrod@example.com").key, by: "ops", reason: nil) == .done(Self.jarrod))
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: Self.jarrod, lifetime: Self.hour) }
        }
    }

    /// The one who can sign up and log in with the address is the one an operator means by it.
    @Test(arguments: GatewayStoresKind.allCases)
    func ofAccountsSharingAnAddressTheLocalOneIsSwitchedFirst(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            var external = Self.jarrod
            external.email = "ada@example.com"
            try await stores.accounts.upsertExternal(external)
            let ada = try await Self.ada(stores)
            #expect(try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil) == .done(ada))
            let (session, _) = try await stores.sessions.create(for: external, lifetime: Self.hour)
            #expect(try await stores.sessions.account(tokenHash: session.hash)?.account == external, "the other account is not disabled")
        }
    }

    /// With no local account, of the providers' accounts with the address the first added is the one switched,
    /// whatever their keys: the order is what both stores can keep to.
    @Test(arguments: GatewayStoresKind.allCases)
    func ofProvidersAccountsSharingAnAddressTheFirstAddedIsSwitched(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let first = Account(key: "9000000001", provider: "udacity", email: "twin@example.com", firstName: "First", lastName: "T")
            let second = Account(key: "1000000001", provider: "facebook", email: "Twin@Example.com", firstName: "Second", lastName: "T")
            try await stores.accounts.upsertExternal(first)
            try await stores.accounts.upsertExternal(second)
            #expect(try await stores.accounts.disable(emailKey: "twin@example.com", by: "ops", reason: nil) == .done(first))
            #expect(try await stores.accounts.enable(emailKey: "twin@example.com") == .done(first))
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aDisabledAccountsIdentityStillSignsInToItButOpensNoSession(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await stores.accounts.signedIn(Self.google)
            _ = try await stores.accounts.disable(emailKey: "grace@example.com", by: "ops", reason: nil)
            let again = try await stores.accounts.signedIn(Self.google)
            #expect(again.key == grace.key, "signing in again makes no new account that would be enabled")
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: again, lifetime: Self.hour) }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anAccountWhoseErasureBeganHasNoSessionsAndOpensNone(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (session, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            try await stores.accounts.beginErasure(key: ada.key)
            #expect(try await stores.sessions.account(tokenHash: session.hash) == nil)
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: ada, lifetime: Self.hour) }
            #expect(try await stores.accounts.pendingErasures() == [ada.key])
        }
    }

    /// An erasure disables the account; an operator's disabling finds it so, and does not count it twice.
    @Test(arguments: GatewayStoresKind.allCases)
    func anAccountBeingErasedIsDisabledAlreadyToAnOperator(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            try await stores.accounts.beginErasure(key: ada.key)
            #expect(try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: "spam") == .already(ada))
        }
    }

    /// An identity signs in to its account while the erasure runs, as a password login finds it: neither
    /// opens a session.
    @Test(arguments: GatewayStoresKind.allCases)
    func anIdentityWhoseAccountIsBeingErasedOpensNoSession(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await stores.accounts.signedIn(Self.google)
            try await stores.accounts.beginErasure(key: grace.key)
            let again = try await stores.accounts.signedIn(Self.google)
            #expect(again.key == grace.key)
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: again, lifetime: Self.hour) }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aFinishedErasureLeavesNoAccountAndNothingPending(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let (session, _) = try await stores.sessions.create(for: ada, lifetime: Self.hour)
            try await stores.accounts.beginErasure(key: ada.key)
            try await stores.accounts.finishErasure(key: ada.key)
            #expect(try await stores.accounts.account(key: ada.key) == nil)
            #expect(try await stores.accounts.local(emailKey: "ada@example.com") == nil)
            #expect(try await stores.accounts.pendingErasures().isEmpty)
            #expect(try await stores.accounts.disable(emailKey: "ada@example.com", by: "ops", reason: nil) == .noAccount)
            #expect(try await stores.sessions.account(tokenHash: session.hash) == nil)
            #expect(try await stores.sessions.revoke(tokenHash: session.hash) == false, "its sessions are gone, not merely ended")
        }
    }

    /// A login that read the account just before its erasure finished must not open a session for it.
    @Test(arguments: GatewayStoresKind.allCases)
    func anErasedAccountCannotOpenASession(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            try await stores.accounts.beginErasure(key: ada.key)
            try await stores.accounts.finishErasure(key: ada.key)
            await #expect(throws: SessionStoreError.accountDisabled) { try await stores.sessions.create(for: ada, lifetime: Self.hour) }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anErasedAddressCanSignUpAgainAsANewAccount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            try await stores.accounts.beginErasure(key: ada.key)
            try await stores.accounts.finishErasure(key: ada.key)
            let again = try await Self.ada(stores)
            #expect(again.key != ada.key)
            #expect(try await stores.accounts.local(emailKey: "ada@example.com")?.account == again)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func anErasedIdentitySignsInToANewAccount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await stores.accounts.signedIn(Self.google)
            try await stores.accounts.beginErasure(key: grace.key)
            try await stores.accounts.finishErasure(key: grace.key)
            let again = try await stores.accounts.signedIn(Self.google)
            #expect(again.key != grace.key)
            let (session, _) = try await stores.sessions.create(for: again, lifetime: Self.hour)
            #expect(try await stores.sessions.account(tokenHash: session.hash)?.account == again)
        }
    }

    /// Whoever signs up with the address after an erasure starts with no failed logins of the erased student's.
    @Test(arguments: GatewayStoresKind.allCases)
    func aFinishedErasureForgetsTheAccountsFailedLogins(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let subject = LoginThrottle.accountSubject(EmailAddress(ada.email))
            let now = Timestamp.now()
            for _ in 0..<2 {
                #expect(
                    try await stores.loginFailures.count(.init(id: UUID(), subjects: [subject]), limits: [2], window: .seconds(900), at: now) == nil)
            }
            #expect(try await stores.loginFailures.count(.init(id: UUID(), subjects: [subject]), limits: [2], window: .seconds(900), at: now) != nil)
            try await stores.accounts.beginErasure(key: ada.key)
            try await stores.accounts.finishErasure(key: ada.key)
            #expect(try await stores.loginFailures.count(.init(id: UUID(), subjects: [subject]), limits: [2], window: .seconds(900), at: now) == nil)
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aFinishedErasureForgetsTheAccountsWriteCount(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let ada = try await Self.ada(stores)
            let limit = WriteLimit(allowances: stores.writeAllowances, policy: .init(burst: 1, interval: .seconds(10)), clock: ManualClock())
            // Her count on the default map and on a class map: both forgotten.
            let everywhere = [nil, MapSlug("ios-2027")].map { limit.subjects(account: ada.key, address: nil, map: $0) }
            for subjects in everywhere {
                #expect(try await limit.take(subjects) == .allowed)
                #expect(try await limit.take(subjects) == .wait(seconds: 10))
            }
            try await stores.accounts.beginErasure(key: ada.key)
            try await stores.accounts.finishErasure(key: ada.key)
            for subjects in everywhere { #expect(try await limit.take(subjects) == .allowed) }
        }
    }

    @Test(arguments: GatewayStoresKind.allCases)
    func aFinishedErasureForgetsTheAccountsCommandLineHandoffs(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            let grace = try await stores.accounts.signedIn(Self.google)
            let now = Timestamp.now()
            let code = OIDCSignIn.hash("code")
            try await stores.signIns.beginHandoff(
                PendingHandoff(accountKey: grace.key, challenge: "challenge"), codeHash: code, expiresAt: now.adding(.seconds(60)), at: now)
            try await stores.accounts.beginErasure(key: grace.key)
            try await stores.accounts.finishErasure(key: grace.key)
            #expect(try await stores.signIns.takeHandoff(codeHash: code, at: now) == nil)
        }
    }

    /// A gateway that starts again finishes interrupted erasures oldest first.
    @Test(arguments: GatewayStoresKind.allCases)
    func pendingErasuresAreAnsweredInTheOrderTheyBeganAndEachOnce(_ kind: GatewayStoresKind) async throws {
        try await withGatewayStores(kind) { stores async throws in
            try await stores.accounts.beginErasure(key: "9000000002")
            try await stores.accounts.beginErasure(key: "1000000002")
            try await stores.accounts.beginErasure(key: "9000000002")
            #expect(try await stores.accounts.pendingErasures() == ["9000000002", "1000000002"])
            try await stores.accounts.finishErasure(key: "9000000002")
            #expect(try await stores.accounts.pendingErasures() == ["1000000002"])
        }
    }
}
