import ApplePay
import Foundation
import WalletOrders

extension WebhookEvent {
    /// A sample event of `type` for `merchantIdentifier`, shaped as the real ones (the same
    /// views), with `"test": true` and made-up records that match nothing in the store, so a
    /// shop that acts on it finds no order of its own: what `POST /admin/webhooks/test` sends.
    public static func sample(_ type: WebhookEventType, merchantIdentifier: String, at date: Date) throws -> WebhookEvent {
        let id = "evt_" + RecordIdentifier.random()
        var data = Body.Data(payment: nil, paymentRequest: nil, refund: nil, mandate: nil, guard: nil)
        switch type {
        case .domainVerificationFailed, .domainVerificationRestored, .certificateExpiring, .certificateExpired, .certificateRenewed,
            .registrationDrift, .registrationRestored:
            data.guard = sampleGuard(type, merchantIdentifier: merchantIdentifier, at: date)
        default:
            let payment = samplePayment(type, at: date)
            // An expired or withdrawn request reports no payment, as the real events.
            if type != .paymentRequestExpired && type != .paymentRequestCancelled {
                data.payment = PaymentView(payment: payment, request: nil, refunded: type == .paymentRefunded ? 500 : 0)
                data.payment?.reference = "orchard-test"
                data.payment?.metadata = [:]
            }
            data.paymentRequest = .init(id: payment.orderId, reference: "orchard-test", metadata: [:], idempotencyKey: "orchard-test")
            if type == .paymentRefunded || type == .paymentRefundRefused {
                data.refund = RefundRecord(
                    id: "ref_" + RecordIdentifier.random(), paymentId: payment.id, amount: 500, currency: "EUR",
                    state: type == .paymentRefunded ? .refunded : .refused,
                    reference: "\(payment.reference)-r1", idempotencyKey: "orchard-test", createdAt: date)
            }
            if type == .walletOrderUpdated { data.walletOrder = sampleWalletOrder(payment: payment, at: date) }
            if [.mandateCreated, .mandateUpdated, .mandateEnded].contains(type) {
                data.mandate = MandateView(sampleMandate(type, payment: payment, merchantIdentifier: merchantIdentifier, at: date))
            }
        }
        var body = Body(id: id, type: type.rawValue, created: date, merchantIdentifier: merchantIdentifier, data: data)
        body.test = true
        return WebhookEvent(
            id: id, merchantIdentifier: merchantIdentifier, type: type, payload: try PaymentView.encoder.encode(body).asBytes,
            createdAt: date, nextAttemptAt: date)
    }

    static func samplePayment(_ type: WebhookEventType, at date: Date) -> PaymentRecord {
        let state: PaymentState =
            switch type {
            case .paymentRefused: .refused
            case .paymentUnknown: .unknown
            case .paymentSettled, .paymentRefunded, .paymentRefundRefused: .settled
            case .paymentCancelled: .cancelled
            default: .authorized
            }
        return PaymentRecord(
            id: "pay_" + RecordIdentifier.random(), orderId: "prq_" + RecordIdentifier.random(), transactionId: "00", state: state,
            amount: 1234, currency: "EUR", network: "Visa", lastFour: "4242", processor: "record", reference: "orchard-test",
            processorCode: type == .paymentRefused ? "declined" : nil, createdAt: date)
    }

    static func sampleWalletOrder(payment: PaymentRecord, at date: Date) -> WalletOrderView {
        var parcel = WalletOrder.Fulfillment(fulfillmentIdentifier: "orchard-test", kind: .shipping, status: "onTheWay")
        parcel.carrier = "Orchard test carrier"
        parcel.trackingNumber = "orchard-test"
        let record = WalletOrderRecord(
            orderIdentifier: RecordIdentifier.random(), orderTypeIdentifier: "order.orchard.test", merchantIdentifier: "",
            paymentId: payment.id, authenticationTokenHash: [], createdAt: date, updatedAt: date, version: 2, fulfillments: [parcel])
        return WalletOrderView(record, webServiceURL: "https://orchard.test/wallet-orders")
    }

    static func sampleMandate(_ type: WebhookEventType, payment: PaymentRecord, merchantIdentifier: String, at date: Date)
        -> MandateRecord
    {
        MandateRecord(
            id: "mdt_" + RecordIdentifier.random(), merchantIdentifier: merchantIdentifier, kind: .recurring, paymentId: payment.id,
            orderId: payment.orderId, processor: payment.processor, credential: StoredCredential(reference: "orchard-test"),
            merchantTokenIdentifier: nil, merchantTokenMetadata: nil,
            // An update shows the MPAN details Apple's verified token event gave.
            merchantToken: type == .mandateUpdated
                ? MerchantTokenDetails(
                    expirationDate: "301231", expirationMonth: 12, expirationYear: 2030, suffix: "7840", mpanId: "orchard-test-mpan",
                    signedAt: date, updatedAt: date) : nil,
            currency: payment.currency, network: payment.network,
            lastFour: payment.lastFour, description: "Orchard test mandate", state: type == .mandateEnded ? .ended : .active,
            endedReason: type == .mandateEnded ? "shop" : nil, createdAt: date, endedAt: type == .mandateEnded ? date : nil)
    }

    static func sampleGuard(_ type: WebhookEventType, merchantIdentifier: String, at date: Date) -> GuardView {
        let (kind, state): (GuardCheckKind, GuardState) =
            switch type {
            case .domainVerificationFailed: (.domainFile, .failing)
            case .domainVerificationRestored: (.domainFile, .ok)
            case .certificateExpiring: (.identityCertificate, .expiring)
            case .certificateExpired: (.identityCertificate, .failing)
            case .registrationDrift: (.registration, .failing)
            default: (type == .certificateRenewed ? .identityCertificate : .registration, .ok)
            }
        let record = GuardRecord(
            subject: GuardSubject(merchantIdentifier: merchantIdentifier, kind: kind, target: "shop.example"), state: state,
            stage: state == .expiring ? 30 : 0, detail: "a sample sent by orchard webhooks send-test", checkedAt: date,
            changedAt: date, nextCheckAt: date)
        return GuardView(record, at: date)
    }
}
