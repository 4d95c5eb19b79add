import Foundation

/// What the guard watches, each of which switches Apple Pay off silently when it goes wrong.
public enum GuardCheckKind: String, Sendable, Codable, CaseIterable {
    /// A domain serves its association file as Apple fetches it: https, 200, no redirect, byte for byte.
    case domainFile = "domain_file"
    /// A domain's TLS certificate: Apple re-verifies the domain when it is renewed.
    case domainCertificate = "domain_certificate"
    /// A Merchant Identity certificate (a configured merchant's, or the platform's).
    case identityCertificate = "identity_certificate"
    /// A Payment Processing certificate, by its key's `publicKeyHash`.
    case processingCertificate = "processing_certificate"
    /// Apple's record of a registered merchant still holds every domain of Orchard's registry.
    case registration
}

/// Where a watched thing stands.
public enum GuardState: String, Sendable, Codable, CaseIterable {
    /// Not checked yet.
    case pending
    case ok
    /// A certificate with fewer than 30 whole days left (``GuardRecord/stage`` says which warning).
    case expiring
    /// Wrong now: a domain not served as Apple needs, a certificate expired, a registration
    /// missing domains at Apple.
    case failing
}

/// One thing the guard watches, as configuration and the registry name it.
public struct GuardSubject: Sendable, Codable, Hashable {
    /// A configured merchant ID, a registered merchant's partner ID, or the platform's merchant ID.
    public var merchantIdentifier: String
    public var kind: GuardCheckKind
    /// A domain (``GuardCheckKind/domainFile``, ``GuardCheckKind/domainCertificate``), a
    /// certificate's SHA-256 fingerprint in hex (identity), a key's `publicKeyHash` (processing),
    /// or the partner ID (registration).
    public var target: String

    public init(merchantIdentifier: String, kind: GuardCheckKind, target: String) {
        self.merchantIdentifier = merchantIdentifier
        self.kind = kind
        self.target = target
    }
}

/// A watched thing as stored: its state, since when, and when it is due again.
public struct GuardRecord: Sendable, Codable, Equatable {
    public var subject: GuardSubject
    public var state: GuardState
    /// For ``GuardState/expiring``: the warning given, in days (30, 15 or 7); 0 otherwise.
    public var stage: Int
    /// What was found, and what to do, in plain words.
    public var detail: String
    /// When a certificate (the domain's, an identity, a processing one) stops being valid.
    public var expiresAt: Date?
    public var checkedAt: Date?
    /// When the current run of failed checks began (its first check, before the second look
    /// confirmed it); nil once a check passes.
    public var firstFailureAt: Date?
    /// When ``state`` (or ``stage``) last changed.
    public var changedAt: Date?
    /// Failed checks in a row, including unconfirmed ones (a failure is confirmed on its second).
    public var failures: Int
    /// Self-repairs tried in the current run of failures (registrations only).
    public var repairs: Int
    /// When the record is due; a lease moves it on, so no other instance checks it meanwhile.
    public var nextCheckAt: Date
    /// Bumped by every write: a result is recorded only over the version that was leased.
    public var version: Int

    public init(
        subject: GuardSubject, state: GuardState = .pending, stage: Int = 0, detail: String = "not checked yet", expiresAt: Date? = nil,
        checkedAt: Date? = nil, firstFailureAt: Date? = nil, changedAt: Date? = nil, failures: Int = 0, repairs: Int = 0,
        nextCheckAt: Date, version: Int = 0
    ) {
        self.subject = subject
        self.state = state
        self.stage = stage
        self.detail = detail
        self.expiresAt = expiresAt
        self.checkedAt = checkedAt
        self.firstFailureAt = firstFailureAt
        self.changedAt = changedAt
        self.failures = failures
        self.repairs = repairs
        self.nextCheckAt = nextCheckAt
        self.version = version
    }
}

/// The guard's records as stored. Adapters only insert, lease and compare-and-set;
/// ``GuardPolicy`` decides every state and every event.
public protocol GuardRecords: Sendable {
    /// Makes the stored subjects exactly `subjects`, in one transaction: a missing one is
    /// inserted pending and due at `date`; one no longer watched is deleted; the others are
    /// left as they are.
    func syncGuardSubjects(_ subjects: Set<GuardSubject>, at date: Date) async throws
    /// Leases records due at `date` (`nextCheckAt` ≤ `date`), the longest due first, at most
    /// `limit`: in one transaction their `nextCheckAt` moves to `leaseEnd` and their version is
    /// bumped, so no other caller gets them before then; they come back so.
    func leaseGuardChecks(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [GuardRecord]
    /// Writes `record` with its version + 1, and `events` into the webhook outbox, in one
    /// transaction, if the stored record still has `record.version`; false, changing nothing,
    /// otherwise (it was re-leased or deleted meanwhile).
    func recordGuardCheck(_ record: GuardRecord, events: [WebhookEvent]) async throws -> Bool
    /// Every record, or one merchant's, ordered by merchant, kind and target.
    func guardRecords(merchantIdentifier: String?) async throws -> [GuardRecord]
}
