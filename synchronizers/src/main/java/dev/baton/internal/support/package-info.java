/**
 * What every layer uses and that knows nothing of Redis: argument checks with one message per
 * mistake ({@code Args}), owner ids ({@code Names}), the close of every try-with-resources handle
 * ({@code CloseOnce}), readable durations ({@code Durations}).
 */
package dev.baton.internal.support;
