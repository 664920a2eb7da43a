package dev.mighty.mailbox.bench.cli;

import dev.mighty.mailbox.bench.FourEmitters;

/**
 * The many-producer rows: {@link FourEmitters} (4 threads emitting at once into one sink, delivered through
 * {@code publishOn(Schedulers.newSingle(..))}, {@code n} messages per iteration in total), one row per sink kind.
 * The subscriber checks that each emitter's messages all arrive, once and in order ({@link Workloads.HandOffCheck}
 * with {@value FourEmitters#EMITTERS} emitters); the harness's producer thread is emitter 0.
 */
final class FourEmitterRows {
    static final String SINKS = "sinks_4p_mailbox_throughput";
    static final String REACTOR_SINK = "reactor_sink_4p_mailbox_throughput";
    static final String FLUX_CREATE = "flux_create_4p_mailbox_throughput";

    private FourEmitterRows() {
    }

    /** One row: the emitters of one kind and the check their subscriber runs. */
    static final class Row implements Workloads.HandOffWorkload {
        private final Workloads.HandOffCheck check;
        private final FourEmitters emitters;

        Row(String name, FourEmitters.Kind kind, Workloads.Setup s) {
            this.check = new Workloads.HandOffCheck(name, FourEmitters.EMITTERS);
            this.emitters = FourEmitters.create(kind, name, s.capacity(), s.payload(), Workload::idle,
                    s.threads());
        }

        static Row sinks(Workloads.Setup s) {
            return new Row(SINKS, FourEmitters.Kind.MAILBOX_SINKS, s);
        }

        static Row reactorSink(Workloads.Setup s) {
            return new Row(REACTOR_SINK, FourEmitters.Kind.REACTOR_SINK, s);
        }

        static Row fluxCreate(Workloads.Setup s) {
            return new Row(FLUX_CREATE, FourEmitters.Kind.FLUX_CREATE, s);
        }

        @Override
        public Workloads.HandOffCheck check() {
            return check;
        }

        @Override
        public void open() {
            emitters.open(check);
        }

        @Override
        public void produce(int n) throws InterruptedException {
            emitters.emit(n);
        }

        @Override
        public void close() {
            emitters.close();
        }
    }
}
