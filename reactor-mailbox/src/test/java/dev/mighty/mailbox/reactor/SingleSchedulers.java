package dev.mighty.mailbox.reactor;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Single-thread daemon schedulers for one test, disposed after it. Register as an instance field:
 * {@code @RegisterExtension final SingleSchedulers schedulers = new SingleSchedulers();}. Test thread only.
 */
final class SingleSchedulers implements AfterEachCallback {
    private final List<Scheduler> schedulers = new ArrayList<>();

    /** A new single-thread scheduler whose thread is named {@code name}; disposed after the test. */
    Scheduler single(String name) {
        final Scheduler scheduler = Schedulers.newSingle(name, true);
        schedulers.add(scheduler);
        return scheduler;
    }

    @Override
    public void afterEach(ExtensionContext context) {
        schedulers.forEach(Scheduler::dispose);
        schedulers.clear();
    }
}
