/**
 * The only way to Redis. {@link dev.baton.internal.command.CommandExecutor} sends every script
 * (EVALSHA, EVAL once on NOSCRIPT, clean-ups as EVAL in the connection's order) and every plain
 * read, each bounded by the command timeout and re-sent only where nothing ran;
 * {@code Failures} says what every failure means, the one translation into Baton's exceptions;
 * {@code ReplicaSyncer} runs WAIT after a change and {@code ReplicaShortfall} carries the reply of
 * a change too few replicas acknowledged.
 */
package dev.baton.internal.command;
