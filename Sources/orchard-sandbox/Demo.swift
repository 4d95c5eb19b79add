import ArgumentParser
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardServer
import OrchardServices
import OrchardTesting

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Try Orchard on this machine: the server, a mock Apple gateway and a checkout page any browser can pay on.",
        discussion: """
            No Apple account needed, and nothing leaves this machine. Creates a test PKI in \
            --state-dir, starts the mock gateway (mutual TLS) and the server on loopback wired to \
            it, and serves the checkout page (http://localhost:8080/ by default) with a simulated Apple Pay \
            sheet (a clearly labelled ApplePaySession test double) so any browser can pay end to \
            end. It prints the page's address and curl commands to try; Ctrl-C stops it.
            """)

    @Option(help: ArgumentHelp("Folder for the test PKI and the generated configuration.", valueName: "folder"))
    var stateDir: String = ".orchard/demo"

    @Option(help: "Port for the Orchard server (0: any free port).")
    var port: Int = 8080

    @Flag(help: "Do not serve the simulated Apple Pay sheet (the page then shows only what the browser itself offers).")
    var noSimulatedSheet = false

    @Flag(
        help: """
            Serve a stand-in for Apple's JS SDK that installs the simulated sheet as Apple's SDK installs Apple Pay in \
            Chrome, Edge and Firefox: the page loads it first, then shows its <apple-pay-button>.
            """)
    var standInSdk = false

    @Flag(
        help: """
            Pay through the Payment Request API (checkout.applePayMode "paymentrequest") where the browser has it; \
            the simulated sheet and the stand-in SDK provide Apple Pay's payment method, as Safari and Apple's SDK do.
            """)
    var paymentRequest = false

    @Option(
        help: ArgumentHelp(
            "Load Apple's JS SDK from this URL (https, or http on loopback); by default the demo loads none.", valueName: "url"))
    var applePaySdk: String?

    @Option(
        help: ArgumentHelp(
            "Where payments go: record (stored only), or worldpay or worldline (mock processors started beside the gateway).",
            valueName: DemoProcessor.allCases.map(\.rawValue).joined(separator: "|")))
    var processor: DemoProcessor = .record

    @Flag(
        help: """
            With --processor worldpay or worldline: the mock processor holds the processing key, as those processors \
            set merchants up; Orchard gets the certificate alone and never decrypts.
            """)
    var processorHoldsKey = false

    @Option(
        help: ArgumentHelp(
            """
            With --processor worldpay or worldline: the mock processor's first authorization request fails this way (drop: \
            it takes the payment, then resets the connection; unavailable: it answers 503 and takes nothing), so the \
            payment's outcome is unknown; the reconciler runs every second and settles it from the processor's records \
            or re-sends it under the same reference.
            """,
            valueName: ProcessorFault.allCases.map(\.rawValue).joined(separator: "|")))
    var processorFaultOnce: ProcessorFault?

    @Option(
        help: ArgumentHelp(
            "Send the merchant's webhooks here (https, or http on loopback); the signing secret is written to <state-dir>/webhook-secret.",
            valueName: "url"))
    var webhookUrl: String?

    @Flag(
        help: """
            With --webhook-url: the webhook is mid-rotation, signed with a whsec_ secret (<state-dir>/webhook-secret) \
            and the older one it replaces (<state-dir>/webhook-previous-secret).
            """)
    var webhookRotation = false

    @Flag(
        help: """
            Run as a payment platform integrator: Orchard gets the demo's platform identity (platformIntegrator, \
            merchant.dev.orchard.platform), which the mock gateway accepts for Apple's Web Merchant Registration API, \
            so `orchard domains register` works against the demo (admin token: <state-dir>/admin-token).
            """)
    var platform = false

    @Flag(
        help: """
            Put each paid order in the shopper's Wallet: a test Order Type ID certificate, Orchard's order web service \
            under /wallet-orders, and a mock APNs (HTTP/2, mutual TLS) that receives the pushes; the banner prints the \
            curl commands that play Wallet.
            """)
    var walletOrders = false

    @Flag(
        help: """
            Take Google Pay beside Apple Pay (gateway mode, the processor's gateway name at Google), through a stand-in \
            for Google's pay.js that the demo serves (/demo/google-pay.js) with tokens signed by a test root the demo trusts; \
            the mock processor holds the gateway's key and opens them.
            """)
    var googlePay = false

    @OptionGroup var faults: FaultOptions
    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if processorFaultOnce != nil && processor == .record {
            throw ValidationError("--processor-fault-once needs --processor worldpay or worldline: record calls no processor")
        }
    }

    func run() async throws {
        // Before anything starts (and logs): a refusal is then the one line it should be.
        if webhookRotation && webhookUrl == nil { throw CommandFailure("--webhook-rotation needs --webhook-url") }
        if processorHoldsKey && processor == .record {
            throw CommandFailure("--processor-holds-key needs --processor worldpay or worldline: record calls no processor to decrypt")
        }
        if googlePay && noSimulatedSheet {
            throw CommandFailure("--google-pay serves its stand-in beside the simulated sheet: leave out --no-simulated-sheet")
        }
        let logger = logging.bootstrap(label: "orchard")
        let environment = try DemoEnvironment.prepared(stateDir)
        let gateway = try environment.makeGateway(faults: faults.faults, platform: platform)
        // POST /_mock/token-events can then carry card updates encrypted to the demo merchant's keys.
        gateway.tokenMetadataMinting = try environment.tokenMetadataMinting(processorHoldsKey: processorHoldsKey)
        let gatewayPort = try await gateway.start()
        let processors = processor == .record ? nil : try environment.makeProcessors()
        let heldKey = processorHoldsKey ? try environment.processorHeldKey() : nil
        if let heldKey { processors?.heldKeys = [heldKey.held] }
        if let processorFaultOnce { processors?.answerNext([processorFaultOnce.behaviour]) }
        // As a gateway, the mock processor opens the Google Pay tokens sealed for it.
        if googlePay { processors?.googlePayGateway = try environment.mockGooglePayGateway() }
        let processorPort = try await processors?.start() ?? 0
        let apns = walletOrders ? try environment.makeAPNs() : nil
        let apnsPort = try await apns?.start() ?? 0
        // Wallet reaches the server's own address (its order web service, merchant token usage
        // information), so its port is chosen now.
        let serverPort = port == 0 ? LoopbackPort.free() ?? 0 : port
        let webService = "http://127.0.0.1:\(serverPort)/wallet-orders"
        // In a checkout of the repository the page and catalogue are served from their files, so
        // edits show without a rebuild; anywhere else, the page and catalogue built into the binary.
        let publicDirectory =
            FileManager.default.fileExists(atPath: "Public/index.html")
            ? URL(fileURLWithPath: "Public").standardizedFileURL.path : nil
        let catalogue =
            FileManager.default.fileExists(atPath: "Config/catalogue.json")
            ? URL(fileURLWithPath: "Config/catalogue.json").standardizedFileURL.path : try environment.builtInCatalogue()
        let path = try environment.writeServerConfiguration(
            gatewayPort: gatewayPort, serverPort: serverPort, publicDirectory: publicDirectory, catalogue: catalogue,
            applePaySDK: applePaySdk ?? "none", processor: processor, processorPort: processorPort, webhookURL: webhookUrl,
            webhookRotation: webhookRotation, processorHoldsKey: processorHoldsKey, applePayMode: paymentRequest ? "paymentrequest" : nil,
            reconcileEverySecond: processorFaultOnce != nil, platform: platform,
            walletOrders: walletOrders ? (webService, apnsPort) : nil,
            merchantTokenUsage: "http://127.0.0.1:\(serverPort)\(MerchantTokenUsageSettings.servicePath)", googlePay: googlePay)
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration.load(path: path)
        } catch {
            throw CommandFailure(error.message)
        }
        if standInSdk && (noSimulatedSheet || applePaySdk != nil) {
            throw CommandFailure("--stand-in-sdk serves the SDK and the sheet itself: leave out --no-simulated-sheet and --apple-pay-sdk")
        }
        var sheet =
            noSimulatedSheet
            ? nil : try SimulatedSheet(environment: environment, processorHoldsKey: processorHoldsKey, standInSDK: standInSdk)
        if googlePay { sheet?.googlePay = try StandInGooglePay(environment: environment) }
        let simulator = sheet
        let tokenFile = try environment.adminTokenFile()
        let (stateDir, processor, platform, googlePay) = (self.stateDir, self.processor, self.platform, self.googlePay)
        let (orchard, sandbox) = (Self.typed("orchard"), Self.typed("orchard-sandbox"))
        try await runServer(configuration, simulator: simulator, logger: logger) { port in
            say(
                """

                Orchard demo is running (test certificates only; nothing leaves this machine).
                  checkout page:      http://localhost:\(port)/\(simulator == nil ? "" : "  (simulated Apple Pay sheet: pay with no Apple device)")
                  health:             http://localhost:\(port)/health
                  mock Apple gateway: https://127.0.0.1:\(gatewayPort) (mutual TLS, test CA in \(environment.caFile))
                  configuration:      \(path)

                Open the checkout page in Chromium, Chrome or Firefox and pay: the simulated sheet \
                validates the merchant through the mock gateway, and the server mints a real test \
                token for the total shown. (Safari uses its own Apple Pay, which cannot talk to the mock.)

                Or by hand, a merchant validation over mutual TLS:
                  curl -sS -X POST http://localhost:\(port)/api/apple-pay/session -H 'Content-Type: application/json' -d '{"validationURL":"https://apple-pay-gateway-cert.apple.com/paymentservices/startSession"}'
                an order (priced by the server):
                  curl -sS -X POST http://localhost:\(port)/api/orders -H 'Content-Type: application/json' -d '{"items":[{"productId":"apple-box","quantity":2}]}'
                and a test token for it: \(sandbox) token mint --state-dir \(URL(fileURLWithPath: stateDir).standardizedFileURL.path) --amount <total in cents> --application-data orchard-order:<orderId>

                Payments go to: \(processor == .record ? "the database only (record)" : "a mock \(processor.rawValue) at \(processors?.baseURL ?? "")")\(heldKey == nil ? "" : ", which holds the processing key: Orchard forwards each token encrypted")\(googlePay ? Self.googlePayLine(processor) : "")
                Back office: \(orchard) payments list --server http://127.0.0.1:\(port) --token-file \(tokenFile)\(platform ? Self.platformLines(orchard: orchard, port: port, tokenFile: tokenFile) : "")\(apns == nil ? "" : Self.walletLines(port: port, apnsPort: apnsPort))
                Merchant token usage information: announced to the mock gateway after each mandate's first payment and charge; \
                GET https://127.0.0.1:\(gatewayPort)/_mock/merchant-tokens/<merchantTokenIdentifier> (client certificate) gives the \
                token's private key and what Orchard announced, for playing Wallet (docs/mandates.md).

                Press Ctrl-C to stop.
                """)
        }
        await gateway.stop()
        await processors?.stop()
        await apns?.stop()
    }

    /// The banner's line for `--google-pay`: the stand-in and the gateway its tokens are sealed for.
    static func googlePayLine(_ processor: DemoProcessor) -> String {
        let gateway = DemoEnvironment.googlePayGateway(for: processor)
        return """

            Google Pay: stand-in pay.js at \(StandInGooglePay.scriptPath) (test root, not Google's); gateway \(gateway.gateway), \
            gatewayMerchantId \(gateway.merchantId)\(processor == .record ? "" : ": the mock processor opens the tokens")
            """
    }

    /// The banner's lines for `--platform`: the platform and a registration to try.
    static func platformLines(orchard: String, port: Int, tokenFile: String) -> String {
        """

        Platform integrator: \(DemoEnvironment.platformIdentifier) (the mock gateway accepts its identity). Register a shop:
          \(orchard) domains register --server http://127.0.0.1:\(port) --token-file \(tokenFile) --partner-id shop-1 --name 'Shop One' --domain shop-one.example
        """
    }

    /// The banner's lines for `--wallet-orders`: where Wallet's calls go, and how to play Wallet by hand.
    static func walletLines(port: Int, apnsPort: Int) -> String {
        let base = "http://127.0.0.1:\(port)/wallet-orders/v1"
        let type = DemoEnvironment.orderTypeIdentifier
        return """

            Wallet orders: on (Order Type ID \(type)); web service \(base); pushes go to the mock APNs at https://127.0.0.1:\(apnsPort) (HTTP/2, mutual TLS).
            Pay on the page; the authorize answer's orderDetails names ORDER and TOKEN. Then play Wallet:
              curl -sS -o order.order -D - \(base)/orders/\(type)/ORDER -H 'Authorization: AppleOrder TOKEN'
              curl -sS -X POST \(base)/devices/my-device/registrations/\(type)/ORDER -H 'Authorization: AppleOrder TOKEN' -H 'Content-Type: application/json' -d '{"pushToken":"\(String(repeating: "ab", count: 32))"}'
              curl -sS \(base)/devices/my-device/registrations/\(type)
            Ship it (an API key from orchard keys create; the payment ID from the authorize answer):
              curl -sS -X POST http://127.0.0.1:\(port)/v1/payments/PAYMENT/fulfillments -H "Authorization: Bearer $ORCHARD_API_KEY" -H 'Content-Type: application/json' -d '{"fulfillmentIdentifier":"parcel-1","type":"shipping","status":"onTheWay","carrier":"DHL","trackingNumber":"123"}'
            """
    }

    /// How to type the executable `name`, beside this one, so that the commands the demo prints
    /// run as pasted: by name when this one was started through the PATH, else by its whole path
    /// (scripts/demo starts `.build/debug/orchard-sandbox` after a `cd`).
    static func typed(_ name: String) -> String {
        guard let invoked = CommandLine.arguments.first, invoked.contains("/") else { return name }
        return URL(fileURLWithPath: invoked).deletingLastPathComponent().appendingPathComponent(name).standardizedFileURL.path
    }
}

extension DemoProcessor: ExpressibleByArgument {}

extension DemoEnvironment {
    /// The system's words for a file error (Foundation's own are "The operation could not be completed").
    static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        if nsError.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(nsError.code))) }
        return "\(error)"
    }

    /// The test PKI in `stateDir` (made if needed), or one line saying why the folder cannot hold it.
    static func prepared(_ stateDir: String) throws -> DemoEnvironment {
        do {
            return try prepare(directory: stateDir)
        } catch {
            throw CommandFailure("\(stateDir): cannot hold the test PKI (\(reason(error)))")
        }
    }
}

/// How `demo --processor-fault-once` makes the mock processor's first authorization fail.
enum ProcessorFault: String, CaseIterable, ExpressibleByArgument {
    case drop, unavailable

    var behaviour: MockProcessorBehaviour {
        switch self {
        case .drop: .dropAfterCharge
        case .unavailable: .status(503)
        }
    }
}
