import ApplePay
import Foundation
import Logging

extension MerchantRegistryService {
    /// How long an unregistration's claim on its merchant's registration lasts: past Apple's
    /// answer and the retirement after it; an instance that crashed meanwhile blocks no longer.
    public static let claimSeconds: TimeInterval = 300

    /// How long an unregistration waits for another claim (the guard's repair, another
    /// unregistration) to end before it refuses; the guard's repair ends within its calls'
    /// timeouts.
    public static let claimWait: Duration = .seconds(60)

    /// Claims merchant `id`'s registration as `holder`, waiting while another holds it (the
    /// guard registering its missing domains again at Apple), so this unregistration reaches
    /// Apple after that `register`, never before it.
    func claim(_ id: String, as holder: String, logger: Logger) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.claimWait)
        var waiting = false
        while true {
            let now = time.now
            switch try await merchantRegistry.claimRegistration(
                partnerIdentifier: id, holder: holder, until: now.addingTimeInterval(Self.claimSeconds), at: now)
            {
            case .claimed: return
            case .absent: throw CoreError(.notFound, "no merchant \(id) is registered on this server")
            case .held: break
            }
            if !waiting {
                waiting = true
                logger.notice(
                    "the unregistration waits until the call to Apple under way for this merchant ends", metadata: ["partner": "\(id)"])
            }
            guard clock.now < deadline else {
                throw CoreError(
                    .registrationBusy,
                    "another call to Apple for \(id) (the guard registering its missing domains again, or another unregistration) has not ended: repeat the call in a minute"
                )
            }
            // The holder's release is a store write another instance may make: read again soon.
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// A new merchant the store refused after Apple registered it: another instance recorded a
    /// case variant of its ID a moment before (the store keeps one per lowered ID). Its domains
    /// are unregistered at Apple again, but for any a registered merchant holds; the refusal says
    /// whether that worked.
    func undo(
        _ registration: MerchantRegistration, refused: CoreError, apple: any MerchantRegistrationService, logger: Logger
    ) async -> CoreError {
        let id = registration.partnerInternalMerchantIdentifier
        let held = Set((try? await merchantRegistry.registeredMerchants())?.flatMap(\.domains) ?? registration.domainNames)
        let domains = registration.domainNames.filter { !held.contains($0) }
        guard !domains.isEmpty else { return refused }
        do {
            let undo = try MerchantUnregistration(
                domainNames: domains, partnerInternalMerchantIdentifier: id,
                reason: "registered in error: the identifier differs from a registered merchant's only in letter case"
            ).validated()
            try await apple.unregister(undo)
            return CoreError(.identifierTaken, "\(refused.message); Apple's registration of \(id) was undone")
        } catch {
            logger.error(
                "Apple registered a merchant the registry refused, and undoing it failed",
                metadata: ["partner": "\(id)", "domains": "\(domains.joined(separator: ","))", "error": "\(error)"])
            return CoreError(
                .identifierTaken,
                "\(refused.message); Apple registered \(id)'s domains before the registry refused it, and undoing that failed: unregister \(domains.joined(separator: ", ")) for \(id) at Apple"
            )
        }
    }
}
