import Foundation
import NIOCore
import NIOSSL
import NIOTLS
import Synchronization

/// A JSON string literal.
func json(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}

/// Lowercase hex, as the gateway prints nonces and session IDs.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Sits before TLS so a reset closes the socket without a TLS close_notify.
final class ConnectionResetHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    /// Closes the TCP connection with SO_LINGER 0, so the peer sees a reset.
    func reset() {
        guard let context else { return }
        guard let provider = context.channel as? any SocketOptionProvider else {
            context.close(promise: nil)
            return
        }
        provider.setSoLinger(linger(l_onoff: 1, l_linger: 0)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

final class HandshakeCounter: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    let stats: MockGatewayStats

    init(stats: MockGatewayStats) { self.stats = stats }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted = event {
            stats.handshakesCount.add(1, ordering: .relaxed)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOSSLError, case .handshakeFailed = error {
            stats.failedHandshakesCount.add(1, ordering: .relaxed)
        }
        context.close(promise: nil)
    }
}
