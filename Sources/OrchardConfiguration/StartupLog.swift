import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardServices

/// Logs what an operator should know about a configuration at startup.
public func logStartup(_ configuration: ServerConfiguration, time: TimeSource, logger: Logger) {
    if configuration.trustsTestTokenRoot {
        logger.warning("payments.testTokenRootCertificate is set: payment tokens are verified against a TEST root, not Apple's")
    }
    if let metrics = configuration.metrics, !metrics.isLoopback {
        logger.warning(
            "metrics.host is not a loopback address: /metrics is reachable from the network; keep it behind a firewall",
            metadata: ["host": "\(metrics.host)", "port": "\(metrics.port)"])
    }
    if !configuration.gateway.isProductionHost {
        logger.warning(
            "appleGateway.baseURL is not an Apple host: merchant sessions go to a test gateway",
            metadata: ["baseURL": "\(configuration.gateway.baseURL)"])
    }
    for network in configuration.outbound.tenants.privateNetworks {
        logger.warning(
            "outbound.registeredMerchants.privateNetworks: registered merchants' webhooks, quote URLs and processors may reach this network, which is not public",
            metadata: ["network": "\(network)"])
    }
    for processor in configuration.outbound.tenantTestProcessors {
        logger.warning(
            "outbound.registeredMerchants.testProcessors: the admin API may give a registered merchant this processor, which is not Worldpay's or Worldline's own",
            metadata: ["baseURL": "\(processor.baseURL)"])
    }
    for merchant in configuration.merchants {
        let days = merchant.identity.daysLeft(at: time.now)
        let metadata: Logger.Metadata = [
            "merchant": "\(merchant.merchantIdentifier)", "domains": "\(merchant.domains.joined(separator: ","))",
            "identityDaysLeft": "\(days)",
        ]
        logger.info("merchant configured", metadata: metadata.merging(["processor": "\(merchant.processor.type)"]) { $1 })
        if let connection = merchant.processor.endpoint, !connection.isProductionHost {
            logger.warning(
                "the merchant's processor is a test host, not the processor's own",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "baseURL": "\(connection.baseURL)"])
        }
        if let hash = merchant.identity.merchantIdentifierHash,
            hash.uppercased() != MerchantIdentifierExtension.hash(of: merchant.merchantIdentifier)
        {
            logger.warning(
                "the identity certificate's merchant-ID extension does not match merchantIdentifier (fine for a platform integrator's partner ID)",
                metadata: ["merchant": "\(merchant.merchantIdentifier)", "certificate": "\(merchant.identitySource)"])
        }
    }
}
