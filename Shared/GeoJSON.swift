import NIOCore

extension StudentLocationList {
    /// The pins as an RFC 7946 FeatureCollection, in the list's order: each a Feature whose `id` is the pin's
    /// objectId, a Point at [longitude, latitude] (GeoJSON's order, not the contract's), and as properties the
    /// student's name, the link, the place as they named it and when the pin last changed.
    public var geoJSON: ByteBuffer {
        var writer = JSONWriter(reservingCapacity: 64 + results.count * 300)
        writer.beginObject()
        writer.field("type", "FeatureCollection")
        writer.key("features")
        writer.beginArray()
        for location in results {
            writer.beginObject()
            writer.field("type", "Feature")
            writer.field("id", location.objectId.rawValue)
            writer.key("geometry")
            writer.beginObject()
            writer.field("type", "Point")
            writer.key("coordinates")
            writer.beginArray()
            writer.number(location.longitude)
            writer.number(location.latitude)
            writer.endArray()
            writer.endObject()
            writer.key("properties")
            writer.beginObject()
            writer.field("name", [location.firstName, location.lastName].filter { !$0.isEmpty }.joined(separator: " "))
            writer.field("link", location.mediaURL)
            writer.field("place", location.mapString)
            writer.field("updatedAt", location.updatedAt.iso8601)
            writer.endObject()
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.buffer
    }
}
