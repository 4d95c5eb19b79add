import CurlClient
import Foundation
import OrchardCore

/// Settings whose processor calls out through the shared libcurl client.
protocol CurlProcessorSettings: ProcessorSettings {
    func makeProcessor(http: CurlHTTPClient) -> any PaymentProcessor
}

/// The processors this program is built with, and each merchant's processor from its settings.
public enum ProcessorFactory {
    /// Every driver, for the configuration loader: a new processor adds its driver here.
    public static let drivers: [any ProcessorDriver] = [RecordOnlyDriver(), WorldpayDriver(), WorldlineDriver()]

    /// Each merchant's processor, all on one libcurl client; merchants recording only use the fallback.
    public static func make(merchants: [MerchantConfiguration], http: CurlHTTPClient) -> PaymentProcessors {
        var byMerchant: [String: any PaymentProcessor] = [:]
        for merchant in merchants {
            if let settings = merchant.processor as? any CurlProcessorSettings {
                byMerchant[merchant.merchantIdentifier] = settings.makeProcessor(http: http)
            }
        }
        return PaymentProcessors(byMerchant: byMerchant)
    }
}

/// Registered merchants' processors, on the shared libcurl client.
public struct CurlProcessorMaker: ProcessorMaker {
    let http: CurlHTTPClient

    public init(http: CurlHTTPClient) {
        self.http = http
    }

    public func processor(for settings: any ProcessorSettings) -> any PaymentProcessor {
        (settings as? any CurlProcessorSettings)?.makeProcessor(http: http) ?? RecordOnlyProcessor()
    }
}
