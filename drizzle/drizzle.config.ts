/** drizzle-kit configuration: `npm run db:generate` writes migrations next to this file. */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'sqlite',
  schema: './src/storage/sqlite/schema.ts',
  out: './drizzle',
});
