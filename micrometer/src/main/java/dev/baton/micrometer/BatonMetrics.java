package dev.baton.micrometer;

import dev.baton.Baton;
import dev.baton.BatonObserver;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * Micrometer meters for one or more Baton clients: a {@link BatonObserver} that records what
 * the clients do, and a {@link MeterBinder} that registers the meters.
 * <pre>{@code
 * BatonMetrics metrics = BatonMetrics.builder().tagNames(Set.of("nightly-report")).build();
 * metrics.bindTo(registry);
 * Baton baton = Baton.create(BatonOptions.builder().redisUri(uri).observer(metrics).build());
 * metrics.watch(baton); // for the leases-held gauge
 * }</pre>
 *
 * <table>
 *   <caption>Meters</caption>
 *   <tr><th>name</th><th>type</th><th>tags</th><th>what</th></tr>
 *   <tr><td>{@code baton.acquisitions}</td><td>timer</td><td>kind, outcome, name</td>
 *       <td>how long each acquisition waited (locks, permits, a latch's await), by how it
 *       ended: {@code acquired}, {@code timed-out}, {@code interrupted},
 *       {@code redis-unavailable}, {@code failed}</td></tr>
 *   <tr><td>{@code baton.holds}</td><td>timer</td><td>kind, name</td>
 *       <td>how long a lock was held, from an owner's first hold to its last release</td></tr>
 *   <tr><td>{@code baton.leases.held}</td><td>gauge</td><td></td>
 *       <td>leases the watched clients hold now</td></tr>
 *   <tr><td>{@code baton.leases.lost}</td><td>counter</td><td>cause, name</td>
 *       <td>leases lost while held: {@code gone} (Redis no longer had it) or
 *       {@code unreachable} (renewal could not reach Redis for a whole lease)</td></tr>
 *   <tr><td>{@code baton.renewals}</td><td>timer</td><td>outcome</td>
 *       <td>the watchdog's batched renewal calls: {@code success} or {@code failure}</td></tr>
 *   <tr><td>{@code baton.leader.elections}</td><td>counter</td><td>name</td>
 *       <td>elections won by the clients' candidates</td></tr>
 *   <tr><td>{@code baton.leader.leading}</td><td>gauge</td><td>name</td>
 *       <td>the clients' candidates leading the election now (0 or 1 per client)</td></tr>
 *   <tr><td>{@code baton.leader.epoch}</td><td>gauge</td><td>name</td>
 *       <td>the highest epoch the clients' candidates were elected with</td></tr>
 *   <tr><td>{@code baton.leader.tenure}</td><td>timer</td><td>name, reason</td>
 *       <td>how long a leadership lasted, by how it ended: {@code relinquished}, {@code work-ended},
 *       {@code lost}, {@code closed}</td></tr>
 * </table>
 * The {@code kind} tag is {@code lock}, {@code fair-lock}, {@code read-lock},
 * {@code write-lock}, {@code fenced-lock}, {@code red-lock}, {@code semaphore},
 * {@code permit-expirable-semaphore}, {@code count-down-latch}, {@code rate-limiter} (a rate
 * limiter's call: {@code acquired} when admitted, timed up to its slot; {@code timed-out} when
 * refused; {@code interrupted} when given up while it slept toward its slot) or
 * {@code leader-election} (a candidate's wait to lead, named by the election's lock key,
 * {@code baton_leader:{name}}; the {@code baton.leader.*} meters use the election's name).
 *
 * <p><b>Names as tags.</b> A synchronizer's name becomes the {@code name} tag only if the
 * allow-list accepts it; every other name is tagged {@code other}. Names are often built from
 * ids (an order, a tenant), and a tag with unbounded values takes down a metrics backend, so
 * nothing is tagged by name unless you say so.
 *
 * <p><b>Observations.</b> With {@link Builder#observationRegistry(ObservationRegistry)}, every
 * acquisition is also a Micrometer {@link Observation} named {@value #OBSERVATION} (contextual
 * name {@code "baton acquire <kind>"}), started on the thread that asked for it, so a tracing
 * bridge makes it a child span of that thread's current span, and stopped when it ends.
 * Low-cardinality key values: {@code kind}, {@code outcome} and {@code name} (the same
 * allow-list as the tags); high-cardinality: {@code baton.name}, the synchronizer's name as it is.
 * A registry with a meter handler also records the observation as its own timer.
 *
 * <p>Events that arrive before {@link #bindTo} are not recorded. Binding to several registries
 * records to each.
 */
public final class BatonMetrics implements BatonObserver, MeterBinder {
    /** The {@code name} tag of every synchronizer the allow-list does not accept. */
    public static final String OTHER = "other";
    /** The name of the observation of an acquisition. */
    public static final String OBSERVATION = "baton.acquire";

    private final Predicate<String> tagName;
    private final ObservationRegistry observations;
    private final List<MeterRegistry> registries = new CopyOnWriteArrayList<>();
    private final List<Baton> watched = new CopyOnWriteArrayList<>();

    private BatonMetrics(Predicate<String> tagName, ObservationRegistry observations) {
        this.tagName = tagName;
        this.observations = observations;
    }

    /** A builder; by default no synchronizer name becomes a tag. */
    public static Builder builder() {
        return new Builder();
    }

    /** Meters with no synchronizer name as a tag. */
    public static BatonMetrics create() {
        return builder().build();
    }

    /**
     * Counts {@code baton}'s held leases in the {@code baton.leases.held} gauge (a client that is
     * closed counts 0).
     *
     * @return {@code baton}
     */
    public Baton watch(Baton baton) {
        watched.add(Objects.requireNonNull(baton, "baton"));
        return baton;
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        Gauge.builder("baton.leases.held", this, BatonMetrics::leasesHeld)
                .description("Leases the watched Baton clients hold now, one per lock and owner")
                .register(registry);
        registries.add(registry);
    }

    private double leasesHeld() {
        int held = 0;
        for (Baton baton : watched) {
            held += baton.leasesHeld();
        }
        return held;
    }

    /** Starts the acquisition's observation (when an observation registry was given). */
    @Override
    public Object acquisitionStarted(Kind kind, String name) {
        if (observations == null || observations.isNoop()) {
            return null;
        }
        return Observation.createNotStarted(OBSERVATION, observations)
                .contextualName("baton acquire " + tagValue(kind))
                .lowCardinalityKeyValue("kind", tagValue(kind))
                .lowCardinalityKeyValue("name", nameTag(name))
                .highCardinalityKeyValue("baton.name", String.valueOf(name))
                .start();
    }

    /** Stops the acquisition's observation with its outcome, and records the timer. */
    @Override
    public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos, Object started) {
        if (started instanceof Observation observation) {
            observation.lowCardinalityKeyValue("outcome", tagValue(outcome)).stop();
        }
        acquisitionEnded(kind, name, outcome, waitedNanos);
    }

    @Override
    public void acquisitionEnded(Kind kind, String name, Outcome outcome, long waitedNanos) {
        record("baton.acquisitions", "How long Baton acquisitions waited, by how they ended",
                Tags.of("kind", tagValue(kind), "outcome", tagValue(outcome), "name", nameTag(name)), waitedNanos);
    }

    @Override
    public void released(Kind kind, String name, long heldNanos) {
        record("baton.holds", "How long Baton locks were held, first hold to last release",
                Tags.of("kind", tagValue(kind), "name", nameTag(name)), heldNanos);
    }

    @Override
    public void leaseLost(String name, LossCause cause) {
        Tags tags = Tags.of("cause", tagValue(cause), "name", nameTag(name));
        for (MeterRegistry registry : registries) {
            Counter.builder("baton.leases.lost").description("Leases lost while held").tags(tags).register(registry).increment();
        }
    }

    @Override
    public void renewal(int leases, boolean succeeded, long tookNanos) {
        record("baton.renewals", "The watchdog's batched lease renewals",
                Tags.of("outcome", succeeded ? "success" : "failure"), tookNanos);
    }

    /** This client's candidates leading each election now, and the epoch each last led with (by name tag). */
    private final java.util.Map<String, java.util.concurrent.atomic.AtomicLong> leading = new java.util.concurrent.ConcurrentHashMap<>();
    private final java.util.Map<String, java.util.concurrent.atomic.AtomicLong> epochs = new java.util.concurrent.ConcurrentHashMap<>();

    @Override
    public void elected(String election, long epoch) {
        String tag = nameTag(election);
        java.util.concurrent.atomic.AtomicLong now = leading.computeIfAbsent(tag, t -> new java.util.concurrent.atomic.AtomicLong());
        java.util.concurrent.atomic.AtomicLong last = epochs.computeIfAbsent(tag, t -> new java.util.concurrent.atomic.AtomicLong());
        now.incrementAndGet();
        last.accumulateAndGet(epoch, Math::max);
        for (MeterRegistry registry : registries) {
            Counter.builder("baton.leader.elections").description("Elections won by this client's candidates")
                    .tags("name", tag).register(registry).increment();
            Gauge.builder("baton.leader.leading", now, java.util.concurrent.atomic.AtomicLong::get)
                    .description("This client's candidates leading the election now (0 or 1)").tags("name", tag).register(registry);
            Gauge.builder("baton.leader.epoch", last, java.util.concurrent.atomic.AtomicLong::get)
                    .description("The highest epoch this client's candidates were elected with").tags("name", tag).register(registry);
        }
    }

    @Override
    public void leadershipEnded(String election, dev.baton.LeadershipListener.Revocation why, long ledNanos) {
        String tag = nameTag(election);
        java.util.concurrent.atomic.AtomicLong now = leading.get(tag);
        if (now != null) {
            now.decrementAndGet();
        }
        record("baton.leader.tenure", "How long this client's candidates led, by how it ended",
                Tags.of("name", tag, "reason", tagValue(why)), ledNanos);
    }

    /** Records one duration in the timer {@code name} with {@code tags}, in every bound registry. */
    private void record(String name, String description, Tags tags, long nanos) {
        for (MeterRegistry registry : registries) {
            Timer.builder(name).description(description).tags(tags).register(registry).record(nanos, TimeUnit.NANOSECONDS);
        }
    }

    private String nameTag(String name) {
        return name != null && tagName.test(name) ? name : OTHER;
    }

    private static String tagValue(Enum<?> value) {
        return value.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** Builds {@link BatonMetrics}. */
    public static final class Builder {
        private Predicate<String> tagName = name -> false;
        private ObservationRegistry observations;

        private Builder() {
        }

        /**
         * Also makes every acquisition an {@link Observation} in {@code registry} (none by
         * default); null turns observations off.
         */
        public Builder observationRegistry(ObservationRegistry registry) {
            this.observations = registry;
            return this;
        }

        /** These synchronizer names, and no others, become {@code name} tags. */
        public Builder tagNames(Set<String> names) {
            Set<String> copy = Set.copyOf(Objects.requireNonNull(names, "names"));
            this.tagName = copy::contains;
            return this;
        }

        /**
         * The names this accepts become {@code name} tags; it must accept a bounded set (a few
         * dozen at most), or the backend will drown in series.
         */
        public Builder tagNames(Predicate<String> accept) {
            this.tagName = Objects.requireNonNull(accept, "accept");
            return this;
        }

        /** The meters. */
        public BatonMetrics build() {
            return new BatonMetrics(tagName, observations);
        }
    }
}
