import ServiceLifecycle

/// Runs `pass`, then waits `interval`, again and again until shutdown. A shutdown cuts only the
/// wait: a pass in progress (a webhook being sent, a payment re-sent) finishes first, unless the
/// drain timeout passes and the task is cancelled.
func repeatUntilShutdown(every interval: Duration, _ pass: () async -> Void) async {
    while !Task.isShuttingDownGracefully && !Task.isCancelled {
        await pass()
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
    }
}
