import Foundation

/// The event feed (`GET /v1/events`): a merchant's webhook events as the outbox holds them, for
/// a shop catching up after it missed deliveries. Its bounds and its page's body are decided here.
public enum WebhookEventFeed {
    /// Events on a page when the caller names no `limit`.
    public static let defaultLimit = 50
    /// The most events one page holds: bounds the read and the body (a webhook body is a few KB).
    public static let limits = 1...100

    /// Whether `text` has the shape of an event ID (`evt_` and 32 lowercase hex digits), so a
    /// malformed cursor is told apart from an unknown one without reading the store.
    public static func isEventIdentifier(_ text: Substring) -> Bool {
        guard text.hasPrefix("evt_") else { return false }
        let digits = text.dropFirst(4).utf8
        return digits.count == 32
            && digits.allSatisfy {
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            }
    }

    /// The page's JSON body: `{"events": [...], "next": ...}`, each event exactly the bytes its
    /// webhook deliveries carry (they are written once, when the event is, and sent as stored),
    /// and `next` the last one's ID, or null for an empty page (the caller keeps its cursor).
    public static func body(_ events: [WebhookEvent]) -> [UInt8] {
        var body = Array(#"{"events":["#.utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body += event.payload
        }
        body += Array("],\"next\":".utf8)
        let next = events.last.flatMap { try? JSONEncoder().encode($0.id) }
        body += next.map { Array($0) } ?? Array("null".utf8)
        body.append(UInt8(ascii: "}"))
        return body
    }
}
