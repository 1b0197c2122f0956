#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The gazetteer file held in memory, with the indexes a lookup needs.
///
/// The file groups places under their region and regions under their country (the format is described
/// in `scripts/make-gazetteer.py`). Start-up only indexes each place's folded names; a place's position
/// and population are read from its line when a query reaches it, so loading stays well under a second
/// even in an unoptimised build.
struct GazetteerData: Sendable {
    struct Country: Sendable {
        var code: String
        var name: String
    }

    struct Region: Sendable {
        var name: String
        var abbreviation: String
        var country: Int32
    }

    /// Where a place's line starts in `bytes`, and the region it is listed under.
    struct PlaceLine: Sendable {
        var offset: Int32
        var region: Int32
    }

    /// A place line read in full.
    struct Place: Sendable {
        var name: String
        var region: Int32
        var latitude: Double
        var longitude: Double
        var population: Int
    }

    /// One way a folded name leads to a place (its own name, or one of its alternate names), chained to
    /// the next place known by the same folded name. One chain per name keeps the index to a single
    /// dictionary of integers instead of 180,000 small arrays.
    struct NameMatch: Sendable {
        var place: Int32
        var isAlternate: Bool
        var next: Int32
    }

    /// The file's bytes and a terminating zero, which lets the C scanning functions stop at the end.
    private(set) var bytes: [UInt8]
    private(set) var countries: [Country] = []
    private(set) var regions: [Region] = []
    private(set) var places: [PlaceLine] = []
    private var nameMatches: [NameMatch] = []
    private var firstMatchByName: [String: Int32] = [:]
    /// Folded country names, aliases and codes ("germany", "deu", "de", "usa", "uk").
    private(set) var countriesByKey: [String: [Int32]] = [:]
    /// Folded region names, their short forms and abbreviations ("california", "ca", "berlin").
    private(set) var regionsByKey: [String: [Int32]] = [:]

    init(utf8: [UInt8]) throws {
        bytes = utf8
        bytes.append(0)
        places.reserveCapacity(bytes.count / 34)
        nameMatches.reserveCapacity(bytes.count / 28)
        firstMatchByName.reserveCapacity(bytes.count / 30)
        try GazetteerReader.read(into: &self)
    }

    func matches(forName key: String) -> [NameMatch] {
        var found: [NameMatch] = []
        var next = firstMatchByName[key] ?? -1
        while next >= 0 {
            let match = nameMatches[Int(next)]
            found.append(match)
            next = match.next
        }
        return found
    }

    /// The place's line read in full; nil for a line whose numbers do not parse.
    func place(_ index: Int32) -> Place? {
        let line = places[Int(index)]
        return bytes.withUnsafeBufferPointer { buffer -> Place? in
            let fields = Line(scanning: buffer.baseAddress!, from: Int(line.offset), to: buffer.count - 1)
            guard fields.fieldCount >= 4, let latitude = fields.decimal(1), let longitude = fields.decimal(2),
                let population = fields.integer(3)
            else { return nil }
            return Place(name: fields.text(0), region: line.region, latitude: latitude, longitude: longitude, population: population)
        }
    }

    fileprivate mutating func index(name key: String, place: Int32, isAlternate: Bool) {
        guard !key.isEmpty else { return }
        let index = Int32(nameMatches.count)
        let previous = firstMatchByName.updateValue(index, forKey: key)
        nameMatches.append(NameMatch(place: place, isAlternate: isAlternate, next: previous ?? -1))
    }

    fileprivate mutating func index(country: Int32, under key: String) {
        guard !key.isEmpty, countriesByKey[key]?.contains(country) != true else { return }
        countriesByKey[key, default: []].append(country)
    }

    fileprivate mutating func index(region: Int32, under key: String) {
        guard !key.isEmpty, regionsByKey[key]?.contains(region) != true else { return }
        regionsByKey[key, default: []].append(region)
    }

    fileprivate mutating func add(_ country: Country) { countries.append(country) }
    fileprivate mutating func add(_ region: Region) { regions.append(region) }
    fileprivate mutating func add(_ place: PlaceLine) { places.append(place) }
}

public enum GazetteerError: Error, Equatable {
    case missingResource
    /// A line that fits none of the record kinds, by its 1-based number.
    case malformedLine(Int)
}

/// One line of the file: where it starts and where each of its tab-separated fields ends.
///
/// Written with raw byte values and C's `memchr` rather than string splitting: start-up walks 6 MB, and
/// unoptimised Swift spends far more per byte than the C library does.
private struct Line {
    let base: UnsafePointer<UInt8>
    var start: Int
    /// One past the line's last byte (its newline, or the end of the text).
    var end: Int
    var ends: [Int] = []

    init(scanning base: UnsafePointer<UInt8>, from start: Int, to limit: Int) {
        self.base = base
        self.start = start
        end = start
        scan(from: start, to: limit)
    }

    /// Moves to the line at `start`, reusing the storage of the field list.
    mutating func scan(from start: Int, to limit: Int) {
        self.start = start
        ends.removeAll(keepingCapacity: true)
        let newline = memchr(base + start, 0x0A, limit - start)
        end = newline.map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? limit
        var fieldStart = start
        while let tab = memchr(base + fieldStart, 0x09, end - fieldStart) {
            let position = UnsafeRawPointer(tab) - UnsafeRawPointer(base)
            ends.append(position)
            fieldStart = position + 1
        }
        // Tolerate files written with CRLF line ends.
        ends.append(end > start && base[end - 1] == 0x0D ? end - 1 : end)
    }

    var fieldCount: Int { ends.count }
    var isEmpty: Bool { end == start }
    var firstByte: UInt8 { base[start] }

    func field(_ number: Int) -> UnsafeBufferPointer<UInt8> {
        let start = number == 0 ? self.start : ends[number - 1] + 1
        return UnsafeBufferPointer(start: base + start, count: max(0, ends[number] - start))
    }

    func text(_ number: Int) -> String {
        String(decoding: field(number), as: UTF8.self)
    }

    /// A plain decimal such as `-122.0839`, read without building a string.
    func decimal(_ number: Int) -> Double? {
        var index = number == 0 ? start : ends[number - 1] + 1
        let end = ends[number]
        var negative = false
        if index < end && base[index] == 0x2D {  // -
            negative = true
            index += 1
        }
        var mantissa = 0
        var scale = 1
        var digits = 0
        var seenPoint = false
        while index < end {
            let byte = base[index]
            if byte == 0x2E && !seenPoint {  // .
                seenPoint = true
            } else if byte >= 0x30 && byte <= 0x39 && digits < 15 {
                mantissa = mantissa * 10 + Int(byte - 0x30)
                if seenPoint { scale *= 10 }
                digits += 1
            } else {
                return nil
            }
            index += 1
        }
        guard digits > 0 else { return nil }
        // Both are exact integers, so the quotient is the double nearest the written decimal.
        let value = Double(mantissa) / Double(scale)
        return negative ? -value : value
    }

    func integer(_ number: Int) -> Int? {
        var index = number == 0 ? start : ends[number - 1] + 1
        let end = ends[number]
        guard index < end, end - index < 19 else { return nil }
        var value = 0
        while index < end {
            let byte = base[index]
            guard byte >= 0x30 && byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
            index += 1
        }
        return value
    }
}

/// Reads the file in one pass, indexing names, regions and countries as it goes.
private struct GazetteerReader {
    var folder = NameFolder()
    var line: Line

    static func read(into data: inout GazetteerData) throws {
        let bytes = data.bytes
        try bytes.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            let limit = buffer.count - 1  // the terminating zero is not text
            var reader = GazetteerReader(line: Line(scanning: base, from: 0, to: 0))
            var lineNumber = 0
            var start = 0
            while start < limit {
                lineNumber += 1
                reader.line.scan(from: start, to: limit)
                if !reader.line.isEmpty { try reader.readLine(number: lineNumber, into: &data) }
                start = reader.line.end + 1
            }
        }
    }

    private mutating func readLine(number: Int, into data: inout GazetteerData) throws {
        let fields = line.fieldCount
        switch line.firstByte {
        case 0x23:  // # comment
            return
        case 0x3D:  // = country
            guard fields >= 2 else { throw GazetteerError.malformedLine(number) }
            line.start += 1
            addCountry(to: &data)
        case 0x2B:  // + region
            guard fields == 2, !data.countries.isEmpty else { throw GazetteerError.malformedLine(number) }
            line.start += 1
            addRegion(to: &data)
        default:
            // Numbers are checked when the place is read; here only the shape of the line.
            guard fields >= 4, !data.regions.isEmpty, line.start < Int32.max else { throw GazetteerError.malformedLine(number) }
            addPlace(to: &data)
        }
    }

    private mutating func addCountry(to data: inout GazetteerData) {
        let index = Int32(data.countries.count)
        data.add(GazetteerData.Country(code: line.text(0), name: line.text(1)))
        data.index(country: index, under: folder.fold(line.field(0)))
        data.index(country: index, under: folder.fold(line.field(1)))
        if line.fieldCount > 2 {
            for alias in alternates(field: 2) { data.index(country: index, under: alias) }
        }
    }

    private mutating func addRegion(to data: inout GazetteerData) {
        let index = Int32(data.regions.count)
        data.add(GazetteerData.Region(name: line.text(0), abbreviation: line.text(1), country: Int32(data.countries.count - 1)))
        let name = folder.fold(line.field(0))
        data.index(region: index, under: name)
        data.index(region: index, under: Self.withoutGenericWords(name))
        data.index(region: index, under: folder.fold(line.field(1)))
    }

    private mutating func addPlace(to data: inout GazetteerData) {
        let index = Int32(data.places.count)
        data.add(GazetteerData.PlaceLine(offset: Int32(line.start), region: Int32(data.regions.count - 1)))
        let name = folder.fold(line.field(0))
        data.index(name: name, place: index, isAlternate: false)
        guard line.fieldCount > 4 else { return }
        var seen: Set = [name]
        for alternate in alternates(field: 4) where seen.insert(alternate).inserted {
            data.index(name: alternate, place: index, isAlternate: true)
        }
    }

    /// Words that dress a region's name without telling it apart: "State of Berlin" is asked for as "Berlin".
    private static let genericWords: Set<Substring> = ["state", "of", "the", "province", "region", "oblast", "prefecture", "governorate"]

    private static func withoutGenericWords(_ key: String) -> String {
        key.split(separator: " ").filter { !genericWords.contains($0) }.joined(separator: " ")
    }

    /// The folded forms of a `|`-separated list.
    private mutating func alternates(field number: Int) -> [String] {
        let list = line.field(number)
        guard let base = list.baseAddress else { return [] }
        var keys: [String] = []
        var start = 0
        while start <= list.count {
            let bar = memchr(base + start, 0x7C, list.count - start)  // |
            let end = bar.map { UnsafeRawPointer($0) - UnsafeRawPointer(base) } ?? list.count
            keys.append(folder.fold(UnsafeBufferPointer(start: base + start, count: end - start)))
            start = end + 1
        }
        return keys
    }
}
