import CCurlShims
import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Owns the libcurl multi handle and the one thread that drives it.
///
/// Other threads only enqueue work (under a mutex) and wake the thread with
/// `curl_multi_wakeup`, the one multi call libcurl allows from another thread.
final class CurlEngine: @unchecked Sendable {
    static let globalInit: CURLcode = {
        // libcurl appends the secrets of every TLS session to the file SSLKEYLOGFILE names (it
        // reads the variable once, here): anyone with that file reads the calls to Apple and the
        // processors. Orchard never asks for it, so the variable is removed before libcurl sees it.
        unsetenv("SSLKEYLOGFILE")
        return curl_global_init(3)  // CURL_GLOBAL_ALL
    }()

    private struct Inbox {
        var submitted: [Transfer] = []
        var cancelled: [Transfer] = []
        var stopping = false
    }

    private let multi: UnsafeMutableRawPointer
    private let share: UnsafeMutableRawPointer
    private let inbox = Mutex(Inbox())
    private let opened = Atomic<Int>(0)
    /// Touched only by the engine thread.
    private var active: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Signalled once the engine thread has cleaned up the multi and share handles.
    private let stopped = DispatchSemaphore(value: 0)
    /// The engine thread, so a shutdown it starts itself does not wait for itself.
    private let engineThread = Mutex<pthread_t?>(nil)

    /// - Parameters:
    ///   - maxTotalConnections, maxHostConnections: libcurl's own connection caps. ``Admission``
    ///     refuses transfers past the same numbers first, so libcurl rarely holds one back; when it
    ///     does (idle connections of other client certificates filling a host's share), the wait
    ///     counts in the transfer's total timeout, so nothing waits unbounded.
    init(maxCachedConnections: Int, maxTotalConnections: Int, maxHostConnections: Int) throws(CurlError) {
        guard Self.globalInit == CURLE_OK else {
            throw CurlError(kind: .other, curlCode: Int32(Self.globalInit.rawValue), message: "curl_global_init failed")
        }
        guard let multi = curl_multi_init(), let share = curl_share_init() else {
            throw CurlError(kind: .other, message: "cannot create a libcurl multi or share handle")
        }
        self.multi = multi
        self.share = share
        _ = orchard_curl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, maxCachedConnections)
        _ = orchard_curl_multi_setopt_long(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, maxTotalConnections)
        _ = orchard_curl_multi_setopt_long(multi, CURLMOPT_MAX_HOST_CONNECTIONS, maxHostConnections)
        // TLS sessions survive a closed connection, so a reconnect resumes instead of a full handshake.
        _ = orchard_curl_share_setopt_lock_data(share, CURL_LOCK_DATA_SSL_SESSION)
        _ = orchard_curl_share_setopt_lock_data(share, CURL_LOCK_DATA_DNS)
        try startThread()
    }

    var connectionsOpened: Int { opened.load(ordering: .relaxed) }

    func submit(_ transfer: Transfer) {
        let accepted = inbox.withLock { inbox in
            guard !inbox.stopping else { return false }
            inbox.submitted.append(transfer)
            return true
        }
        guard accepted else {
            transfer.finish(.failure(CurlError(kind: .shutdown, message: "the HTTP client was shut down")))
            return
        }
        curl_multi_wakeup(multi)
    }

    func cancel(_ transfer: Transfer) {
        transfer.cancelled.store(true, ordering: .sequentiallyConsistent)
        inbox.withLock { $0.cancelled.append(transfer) }
        curl_multi_wakeup(multi)
    }

    func shutdown() {
        let first = inbox.withLock { inbox in
            defer { inbox.stopping = true }
            return !inbox.stopping
        }
        if first { curl_multi_wakeup(multi) }
    }

    /// Waits (blocking this thread, at most 5 s) until the engine thread has cleaned up: for a
    /// process about to exit, whose exit handlers (OpenSSL's OPENSSL_cleanup among them) must not
    /// run while this thread still frees its connections' TLS state. Returns at once on the engine
    /// thread itself.
    func waitUntilStopped() {
        let onEngineThread = engineThread.withLock { thread in thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        guard !onEngineThread else { return }
        if stopped.wait(timeout: .now() + .seconds(5)) == .success { stopped.signal() }
    }

    private func startThread() throws(CurlError) {
        let retained = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(
            &thread, nil,
            { argument in
                let engine = Unmanaged<CurlEngine>.fromOpaque(argument!).takeRetainedValue()
                engine.run()
                return nil
            }, retained)
        guard status == 0 else {
            Unmanaged<CurlEngine>.fromOpaque(retained).release()
            throw CurlError(kind: .other, message: "cannot start the libcurl thread (\(status))")
        }
        pthread_detach(thread)
    }

    private func run() {
        engineThread.withLock { $0 = pthread_self() }
        var running: Int32 = 0
        while true {
            let (submitted, cancelled, stopping) = inbox.withLock { inbox in
                defer {
                    inbox.submitted.removeAll(keepingCapacity: true)
                    inbox.cancelled.removeAll(keepingCapacity: true)
                }
                return (inbox.submitted, inbox.cancelled, inbox.stopping)
            }
            if stopping {
                let error = CurlError(kind: .shutdown, message: "the HTTP client was shut down")
                for transfer in submitted {
                    transfer.release()
                    transfer.finish(.failure(error))
                }
                for (easy, transfer) in active {
                    curl_multi_remove_handle(multi, easy)
                    transfer.release()
                    transfer.finish(.failure(error))
                }
                active.removeAll()
                curl_multi_cleanup(multi)
                curl_share_cleanup(share)
                stopped.signal()
                return
            }
            for transfer in submitted {
                if transfer.cancelled.load(ordering: .sequentiallyConsistent) {
                    transfer.release()
                    transfer.finish(.failure(Self.cancelledError))
                    continue
                }
                _ = orchard_curl_easy_setopt_share(transfer.easy, share)
                let code = curl_multi_add_handle(multi, transfer.easy)
                guard code == CURLM_OK else {
                    let message = String(cString: curl_multi_strerror(code))
                    transfer.release()
                    transfer.finish(.failure(CurlError(kind: .other, curlCode: Int32(code.rawValue), message: message)))
                    continue
                }
                active[transfer.easy] = transfer
            }
            for transfer in cancelled where active.removeValue(forKey: transfer.easy) != nil {
                curl_multi_remove_handle(multi, transfer.easy)
                transfer.release()
                transfer.finish(.failure(Self.cancelledError))
            }

            curl_multi_perform(multi, &running)
            var easy: UnsafeMutableRawPointer?
            var code = CURLE_OK
            while orchard_curl_multi_info_read(multi, &easy, &code) == 1 {
                guard let easy, let transfer = active.removeValue(forKey: easy) else { continue }
                let (result, connects) = transfer.outcome(for: code)
                opened.add(connects, ordering: .relaxed)
                curl_multi_remove_handle(multi, easy)  // the connection returns to the multi's pool
                transfer.release()
                transfer.finish(result)
            }
            // Sleeps until a socket is ready, libcurl's next timer, a wakeup, or one second.
            curl_multi_poll(multi, nil, 0, 1000, nil)
        }
    }

    private static let cancelledError = CurlError(kind: .cancelled, message: "the request was cancelled")
}
